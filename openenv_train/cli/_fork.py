"""``openenv-train fork OWNER/SPACE``: duplicate a Hub Space into your account (OpenEnv's ``openenv fork``)."""

from __future__ import annotations

from typing import Annotated

import typer

from . import _push
from ._app import app, err, fail

__all__ = ["fork"]


@app.command()
def fork(
    source: Annotated[str, typer.Argument(help="The Space to duplicate, OWNER/NAME.")],
    repo_id: Annotated[str | None, typer.Option("--repo-id", "-r", help="The new Space, USER/NAME (default: your "
                                                                         "user / the source's name).")] = None,
    private: Annotated[bool, typer.Option(help="Make the new Space private.")] = False,
    set_env: Annotated[list[str] | None, typer.Option("--set-env", "-e", help="Space variable KEY=VALUE "
                                                                              "(repeatable).")] = None,
    set_secret: Annotated[list[str] | None, typer.Option("--set-secret", "--secret", "-s", help="Space secret "
                                                         "KEY=VALUE (repeatable; never printed).")] = None,
    hardware: Annotated[str | None, typer.Option("--hardware", "-H", help="Hardware of the new Space.")] = "cpu-basic",
) -> None:
    """Duplicate a Space (the Hub's duplicate_space) with its variables, secrets and hardware.

    Needs a Hugging Face token (HF_TOKEN or 'huggingface-cli login').
    """
    from huggingface_hub import get_token

    for label, value in (("source Space", source), ("--repo-id", repo_id)):
        if value is not None and value.count("/") != 1:
            raise fail(f"{label} must be OWNER/NAME, got {value!r}", code=2)
    try:
        variables = _push.parse_kv_pairs(set_env or [], flag="--set-env")
        secrets = _push.parse_kv_pairs(set_secret or [], flag="--set-secret", secret=True)
    except ValueError as exc:
        raise fail(str(exc), code=2) from None
    token = get_token()
    if not token:
        raise fail("no Hugging Face token: run 'huggingface-cli login' or set HF_TOKEN")
    kwargs: dict[str, object] = {"from_id": source, "private": private, "hardware": hardware or "cpu-basic"}
    if repo_id is not None:
        kwargs["to_id"] = repo_id
    if variables:
        kwargs["variables"] = [{"key": k, "value": v} for k, v in variables.items()]
    if secrets:
        kwargs["secrets"] = [{"key": k, "value": v} for k, v in secrets.items()]
    api = _push._hf_api(token)
    try:
        result = api.duplicate_space(**kwargs)
    except Exception as exc:  # the Hub client raises requests/httpx/hub errors alike
        missing = type(exc).__name__ == "RepositoryNotFoundError" or "404" in str(exc)
        hint = (f"the Space {source} does not exist or is not visible to your token; check OWNER/NAME on the Hub"
                if missing else "check the network, the token's rights and --repo-id")
        raise fail(f"fork of {source} failed ({type(exc).__name__}: {str(exc)[:300]}); {hint}") from None
    new_id = getattr(result, "repo_id", None) or str(result).split("/spaces/")[-1].rstrip("/")
    err.print(f"forked {source}")
    typer.echo(f"https://huggingface.co/spaces/{new_id}")
