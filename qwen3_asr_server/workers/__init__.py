"""`--workers N`: N HTTP worker processes on one port in front of the one supervised vLLM.

The main process owns the supervisors and the workers; a small shared table (`table`) tells
the workers what the supervisors know and lets them share the admission limits.
"""
