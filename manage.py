#!/usr/bin/env python
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "groundwork.settings")
    from django.core.management import execute_from_command_line

    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command not in ("", "runserver", "help"):
        # A management command acts for no one tenant: the named system scope `command:<name>` of
        # row-level security (groundwork/rls.py). Requests a server handles get their own scope.
        import django

        django.setup()
        from groundwork.rls import process_default_scope_set

        process_default_scope_set(f"command:{command}")
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
