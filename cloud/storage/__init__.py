"""Where the cloud keeps what it received and answered: the store interface and its SQLite and Redis
implementations (`open_store` picks one from the config), and the claims that make one worker answer each event."""
