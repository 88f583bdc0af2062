from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from tasks_app.role_grants import DEMO_LOGINS, demo_users_ensure


class Command(BaseCommand):
    help = "Create (or repair) one demo user per role with documented DEMO passwords, and print the logins."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--print-only", action="store_true", help="Print the demo logins; change nothing.")
        parser.add_argument(
            "--allow-production",
            action="store_true",
            help="Create the demo users even with DEBUG off (they have public passwords).",
        )

    def handle(self, *args, print_only: bool = False, allow_production: bool = False, **options) -> None:
        if print_only:
            self._print_logins(status={})
            return
        if not settings.DEBUG and not allow_production:
            raise CommandError(
                "Refusing to create demo users with public passwords while DEBUG is off; "
                "pass --allow-production if this really is a demo machine."
            )
        outcome = demo_users_ensure()
        self._print_logins(status={login.username: what for login, what in outcome})

    def _print_logins(self, *, status: dict[str, str]) -> None:
        out = self.stdout
        out.write(
            self.style.WARNING(
                "DEMO CREDENTIALS: public passwords for a local demo only; never use them on a shared machine."
            )
        )
        header = f"  {'role':<10}{'username':<10}{'password':<22}{'access':<22}"
        if status:
            header += "status"
        out.write(header)
        for login in DEMO_LOGINS:
            access = "superuser" if login.is_superuser else "staff (admin site)" if login.is_staff else "site"
            line = f"  {login.role:<10}{login.username:<10}{login.password:<22}{access:<22}"
            if status:
                line += status.get(login.username, "")
            out.write(line.rstrip())
