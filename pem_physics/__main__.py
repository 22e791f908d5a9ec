import os
import sys

from .cli import QUICK_EXIT, main

code = main()
if sys.argv[1:2] and sys.argv[1] in QUICK_EXIT:
    # its files are closed and published, nothing runs beside it: skip the interpreter's teardown (cli.QUICK_EXIT)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):   # a closed or broken pipe: what was printed did not all arrive — as Python
        code = code or 120          # itself ends when its final flush fails
    os._exit(code)
sys.exit(code)
