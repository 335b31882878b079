"""`manage.py mcp_stdio`: the MCP server over stdin/stdout for a local client (an IDE, a desktop agent), acting as
the API key in GROUNDWORK_API_KEY, with the same tools and the same access path as `/mcp`."""

import anyio
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import close_old_connections
from mcp.server.stdio import stdio_server

from chat.mcp.server import mcp_server_build
from groundwork.authority import Authority
from groundwork.rls import process_default_scope_set
from groundwork.selectors import AuthorityDenied, authority_for_api_key


async def stdio_serve(server) -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


class Command(BaseCommand):
    help = "Serve the MCP tools over stdio as the API key in GROUNDWORK_API_KEY."

    def handle(self, *args, **options):
        raw_key = settings.GROUNDWORK_API_KEY
        if not raw_key:
            raise CommandError("GROUNDWORK_API_KEY is not set: name the API key this server acts as")
        # manage.py gives every command a process-wide system scope (every tenant's rows); this one acts for one
        # key's tenant only, so it drops that scope before serving (each tool call sets the key's own).
        process_default_scope_set(None)

        def resolve() -> Authority:
            # Re-read on every call, as each REST request re-reads its key: a revoked key stops the next call. A
            # long-lived process has no request cycle to retire a dead or stale connection: do it per call.
            close_old_connections()
            return authority_for_api_key(raw_key=raw_key, tenant_slug=None)[0]

        try:
            resolve()
        except AuthorityDenied as exc:
            raise CommandError(f"GROUNDWORK_API_KEY was refused: {exc}") from exc
        anyio.run(stdio_serve, mcp_server_build(resolve))
