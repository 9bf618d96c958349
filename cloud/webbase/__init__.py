"""What every HTTP route shares: who may open the page (one-time links, session cookies) and the one error answer."""
