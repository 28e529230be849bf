"""ASGI middleware, what wraps every request before a route sees it: request ids, metrics, the
access log, the error guard, the drain, the API key, disconnects and body limits."""
