"""What the server tells its operators about itself: the Prometheus metrics (`metrics`) and
logs with no secret in them (`log_redaction`). Low in the house, so that the backend and every
door can count and log."""
