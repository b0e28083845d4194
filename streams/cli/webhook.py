"""``koord webhook``: Koordinator's admission webhooks (ClusterColocationProfile onboarding, validation)
served to a real API server over HTTPS (``streams.webhook``)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import click

from streams.bridge.api import KubeApi
from streams.cli import context
from streams.stopsignals import stop_on_signals
from streams.webhook.run import WebhookOptions, run

DEFAULTS = WebhookOptions()


def _service(value: str | None) -> tuple[str, str, int] | None:
    if not value:
        return None
    try:
        target, _, port = value.partition(":")
        namespace, name = target.split("/")
        return namespace, name, int(port or 443)
    except ValueError:
        raise click.BadParameter(f"{value!r}: expected NAMESPACE/NAME[:PORT]", param_hint="--service") from None


@click.command()
@click.option("--kubeconfig", type=click.Path(exists=True, dir_okay=False, path_type=Path), envvar="KUBECONFIG",
              help="Kubeconfig of the cluster (default $KUBECONFIG; none: the pod's service account).")
@click.option("--context", "kube_context", default=None, help="Context of the kubeconfig (default: its current one).")
@click.option("--host", default=DEFAULTS.host, show_default=True, help="Address to listen on.")
@click.option("--port", default=DEFAULTS.port, show_default=True, type=int, help="HTTPS port to listen on.")
@click.option("--url", default=None, help="Base URL the API server calls (default https://HOST:PORT).")
@click.option("--service", default=None, help="NAMESPACE/NAME[:PORT] of the Service in front of the webhook "
              "(in a cluster; replaces --url in the configurations).")
@click.option("--cert-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where the webhook's CA and serving certificate live (default $KOORD_HOME/webhook).")
@click.option("--register/--no-register", default=True, show_default=True,
              help="Write the Mutating/ValidatingWebhookConfiguration (with the CA bundle) to the API server.")
def webhook(kubeconfig: Path | None, kube_context: str | None, host: str, port: int, url: str | None,
            service: str | None, cert_dir: Path | None, register: bool) -> None:
    """Serve Koordinator's admission webhooks to the API server (long-running; stops on SIGTERM)."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx2").setLevel(logging.WARNING)
    options = WebhookOptions(host=host, port=port, url=url, service=_service(service), register=register,
                             cert_dir=cert_dir or context.settings().home / "webhook")

    async def main() -> None:
        stop = asyncio.Event()
        stop_on_signals(stop)
        api = KubeApi(kubeconfig, kube_context)
        try:
            await run(api, options, stop)
        finally:
            await api.close()

    try:
        asyncio.run(main())
    except (ValueError, OSError) as error:
        raise click.ClickException(str(error)) from None


COMMANDS = (webhook,)
