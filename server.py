#!/usr/bin/env python3
"""Run the server: `python server.py --help` lists the flags; unknown flags go to vLLM."""

import sys

from qwen3_asr_server.main import main

if __name__ == "__main__":
    sys.exit(main())
