"""What runs inside a worker (discovery, the decorator, timing, the machine): imports core only."""
