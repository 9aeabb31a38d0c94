"""new_country: a customer active in a country unseen for them in 30 days."""
