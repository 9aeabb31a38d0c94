"""large_amount: a single transaction above its currency's threshold (stateless)."""
