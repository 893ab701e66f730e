"""trawl-dask scan's checkpoints (`--state`): a finished shard saved, taken back by `--resume`
(or why none was), and a resumed shard's result sent to a worker again after a loss."""

import json
import os

from ._checkpoints import CheckpointError, _checkpoint_read, _checkpoint_write, _json_write
from ._common import Fatal, _say
from ._tasks import _output_digest


class _Checkpoints:
    """The `Run` methods that keep and take back shards' checkpoints (state: `Run`'s)."""

    def checkpoint_path(self, shard):
        return os.path.join(self.o.state, f"{self.state_key}-{shard['key']}.shard")

    def save(self, shard, result):
        """Checkpoints a finished shard; a checkpoint that cannot be written (a full disk) is
        said once, and the run goes on without checkpoints: its report does not need them."""
        if not self.saving:
            return
        path = self.checkpoint_path(shard)
        run = os.path.join(self.o.state, f"{self.state_key}.run")
        # The file being written, named if it cannot be (not a temporary file's name, nor the
        # checkpoint's when it is the run's file that failed).
        writing = run
        try:
            if not os.path.exists(run):
                # What the checkpoints are of, for --resume to say what differs when none is taken.
                _json_write(self.o.state, run, {"args": self.result_args, "partitions": self.o.partitions,
                                                "computes": self.computes})
            writing = path
            _checkpoint_write(self.o.state, path, result)
        except OSError as e:
            self.saving = False
            _say(f"--state {self.o.state}: cannot write {writing}: {e.strerror or e}; "
                 f"the run goes on without checkpoints (a --resume reads the shards not saved again)")

    def say_why_none_resumed(self):
        """--resume took no checkpoint: says of what runs the folder holds them, and how those
        runs differ from this one."""
        if self.damaged:
            _say(f"--resume: {self.damaged} checkpoint(s) in {self.o.state} could not be taken "
                 f"(named above); every shard is scanned")
            return
        now = self.result_args + [f"--partitions={self.o.partitions}"]
        others = []
        for name in sorted(os.listdir(self.o.state)):
            if not name.endswith(".run") or name == f"{self.state_key}.run":
                continue
            try:
                with open(os.path.join(self.o.state, name), "rb") as f:
                    r = json.loads(f.read(1 << 20))
                args = list(map(str, r["args"])) + [f"--partitions={int(r['partitions'])}"]
                others.append((args, [str(c) for c in r.get("computes", [])]))
            except (OSError, ValueError, KeyError, TypeError):
                continue
        if not others:
            _say(f"--resume: no checkpoint in {self.o.state}; every shard is scanned")
            return
        for then, computed in others:
            gone = [a for a in then if a not in now]
            new = [a for a in now if a not in then]
            if not gone and not new:
                lacking = [c for c in self.computes if c not in computed] or ["what this run computes"]
                _say(f"--resume: the checkpoints in {self.o.state} hold no {', '.join(lacking)} "
                     f"(their run wrote other outputs), which this run needs; every shard is read again")
                continue
            _say(f"--resume: the checkpoints in {self.o.state} are of a run with other options "
                 f"(then: {' '.join(gone) or '-'}; now: {' '.join(new) or '-'}); every shard is scanned")

    def load(self, shard):
        path = self.checkpoint_path(shard)
        try:
            prior = _checkpoint_read(path)
            # Its digest, as its map gave it (checked against what the reducers counted).
            prior["digest"] = _output_digest(prior)
            return prior
        except FileNotFoundError:
            return None
        except CheckpointError as e:
            self.damaged += 1
            _say(f"{path}: {e}; the shard is read again")
            return None

    def scatter(self, shard_key, prior):
        """A resumed shard's result sent to a worker under a key of this run's (the shares
        handler serves no other), for the reducers to fetch their shares of; sent again after
        a loss, it gets a new key. Under the watchdog (the worker Dask sends it to may be frozen:
        removed as silent, the sending fails, and it is sent once more, to another)."""
        for attempt in (1, 2):
            self.sent += 1
            key = f"trawl-resumed-{self.run_key}-{shard_key}-{self.sent}"
            try:
                return self.on_loop(self.client.scatter({key: prior}, hash=False, asynchronous=True))[key]
            except (OSError, TimeoutError):  # a comm error is an OSError
                if attempt == 2 or self.client.status != "running":
                    raise

    def recover(self, shards):
        """Resumed shards whose result was lost with the worker holding it (data sent from
        here cannot be computed again): sent again from their checkpoints. Whether any was."""
        again = False
        for s in shards:
            k = s["key"]
            if k not in self.resumed or self.early[k][1].status != "cancelled":
                continue
            prior = self.load(s)
            if prior is None:
                raise Fatal(
                    f"shard {k}: its result was lost with a worker and its checkpoint "
                    f"({self.checkpoint_path(s)}) can no longer be read"
                )
            self.early[k] = (self.early[k][0], self.scatter(k, prior))
            self.stats["resent_shards"] = self.stats.get("resent_shards", 0) + 1
            again = True
        return again
