"""The server's life as a process: uvicorn set up and run (one process or each worker), the
protocol classes under it, and the drain (`capacity.drain`) run before it stops, so that no
request is dropped."""
