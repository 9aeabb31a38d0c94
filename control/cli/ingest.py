"""``mesh ingest ack-loss``: an operator says they have dealt with the raw records ingest skipped.

A retention gap ingest reported (docs/ingest.md, "Data loss") stays on the `mesh status` ingest
line as ``DATA LOSS: ...`` until someone acknowledges it, so an incident cannot scroll away
unseen. Acknowledging moves the ranges to ``data_loss_acknowledged`` in
``$MESH_HOME/ingest/status.json`` (kept, stamped with the time): the line goes, the record of
what was lost stays, and the job does not report the same range again.
"""

from __future__ import annotations

import argparse
import time

from shared.file_lock import folder_lock
from shared.json_files import read_json, write_json_atomic
from shared.service_files import acknowledge_data_loss, data_loss_text, ingest_status_file
from shared.settings import Settings


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("ingest", help="acknowledge what the ingest job reported")
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    actions.add_parser(
        "ack-loss", help="acknowledge the raw records ingest skipped (clears DATA LOSS)"
    ).set_defaults(handler=ack_loss)


def ack_loss(args: argparse.Namespace, settings: Settings) -> int:
    status_file = ingest_status_file(settings.home)
    with folder_lock(status_file.parent):
        status = read_json(status_file) or {}
        loss = data_loss_text(status)
        if not loss:
            print("ingest: no data loss to acknowledge")
            return 0
        write_json_atomic(status_file, acknowledge_data_loss(status, time.time()))
    print(f"acknowledged {loss.removeprefix('DATA LOSS: ')}; the ranges stay in {status_file} "
          "under data_loss_acknowledged")  # fmt: skip
    return 0
