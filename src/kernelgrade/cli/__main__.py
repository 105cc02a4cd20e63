import sys

from kernelgrade.cli import main

sys.exit(main())
