"""The bisect's answer, table, page and figure from the recorded journal (a bisect that ended):
the command's own `_finish` path, no build installed."""
import shutil, sys, json
from pathlib import Path
out = Path(sys.argv[1]); shutil.rmtree(out, ignore_errors=True); out.mkdir(parents=True)
from harness.commands import main
from harness.commands import bisect as cmd
from harness.launch.bisect import JOURNAL, folder_of, key_of
argv = ["bisect", "--good", "tensorflow-cpu==2.20.*", "--bad", "tensorflow-cpu==2.21.*", "--model", "dense",
        "--strategy", "mirrored", "--replicas", "2", "--batch", "64", "--budget-min", "100", "--results", str(out / "res")]
import argparse
parser = argparse.ArgumentParser(); sub = parser.add_subparsers(dest="cmd"); cmd.add_parser(sub, "")
args = parser.parse_args(argv); args.command = "bisect"
p = cmd.plan(args)
folder = folder_of(out / "res", key_of(p.identity()))
folder.mkdir(parents=True)
src = Path(__file__).resolve().parents[1] / "2026-11-27-bisect" / "journal.jsonl"
first = json.loads(src.read_text().splitlines()[0])
print("identity same:", first["identity"] == p.identity(), file=sys.stderr)
shutil.copy(src, folder / JOURNAL)
sys.exit(main(argv))
