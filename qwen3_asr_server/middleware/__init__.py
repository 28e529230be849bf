"""What wraps every request before a route sees it: request ids, metrics, the access log,
the error guard, the drain, body limits, disconnects, and uvicorn's protocol classes."""
