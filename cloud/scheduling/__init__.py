"""Who is answered when: one scheduler per back-end, its fair queue, token budgets and capacity (the load state
devices steer by)."""
