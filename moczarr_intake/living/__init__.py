"""The living catalog: its build record, an update's reading and partial write, the placement order, the lock."""
