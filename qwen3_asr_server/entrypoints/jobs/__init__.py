"""Transcriptions that outlive the connection: OpenAI's Files and Batches APIs, run by each
server from a store it may share with others, and their webhooks."""
