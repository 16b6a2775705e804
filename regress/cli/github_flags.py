"""Flags of the commands that talk to GitHub (`comment`, `notify`), and the links they add."""

from __future__ import annotations

import argparse
import os


def add(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--repo",
        metavar="OWNER/NAME",
        help="the GitHub repository (default: $GITHUB_REPOSITORY); the token is $GITHUB_TOKEN",
    )
    p.add_argument(
        "--api-url", metavar="URL", help="GitHub's REST API (default: $GITHUB_API_URL, else https://api.github.com)"
    )


def site_url(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--site-url",
        metavar="URL",
        help="where the site is published, to link each benchmark's chart (default: site_url in [tool.regress])",
    )
    p.add_argument(
        "--run-url", metavar="URL", help="the run to link to (default: this GitHub Actions run, from its environment)"
    )


def run_url(flag: str | None) -> str:
    """This workflow run's page, from the variables every step has; empty outside GitHub Actions."""
    if flag:
        return flag
    server, repo, run = (os.environ.get(k, "") for k in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID"))
    return f"{server.rstrip('/')}/{repo}/actions/runs/{run}" if server and repo and run.isdigit() else ""


def chart_url(cfg, flag: str | None):
    from regress.report.links import chart_url as link

    return link(flag if flag is not None else cfg.site_url)
