"""The vLLM processes behind the API and every conversation with them: what each backend is,
its command line, its supervised process, and the clients that talk to it."""
