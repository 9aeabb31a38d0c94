"""velocity: at least N transactions by one customer within a sliding window."""
