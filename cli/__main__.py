"""``python -m benchsmith.cli`` = the ``benchsmith`` command."""

from benchsmith.cli import main

if __name__ == "__main__":
    main()
