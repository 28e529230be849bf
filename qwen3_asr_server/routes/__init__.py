"""The API's routes: the edge where HTTP is read into a request (`protocol`) and a service's
answer written back, one module per group of endpoints."""
