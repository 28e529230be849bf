"""How much work the server takes at once, and what waits: requests to vLLM (`admission`), the
decoded audio held in memory (`budget`), Realtime sessions and Wyoming connections (`seats`),
each counted in one process or, with `--workers N`, for all the workers together (`shared`);
the requests and sessions a SIGTERM waits for (`drain`); and what a live session holds of
these, taken and given back as one (`lease`)."""
