"""Tests of workflow_scripts.data.fetch: mirror, licensed directory, URL, checksums, atomicity."""
from __future__ import annotations

import gzip
import hashlib
import http.server
import io
import json
import tarfile
import threading
from pathlib import Path

import pytest
import yaml

from nmtmodels.files import DataError
from workflow_scripts.data import fetch as fetch_module
from workflow_scripts.data.fetch import content_sha256, fetch
from workflow_scripts.data.locations import missing_licensed

REPO = Path(__file__).resolve().parents[1]
MIRROR = Path(__file__).resolve().parents[2] / "shared" / "data"
TEXT = "Ein Satz.\nNoch einer: äöü\n".encode()
TEXT_SHA = hashlib.sha256(TEXT).hexdigest()


@pytest.fixture(autouse=True)
def no_environment(monkeypatch):
    monkeypatch.delenv(fetch_module.MIRROR_ENV, raising=False)
    monkeypatch.delenv(fetch_module.LICENSED_ENV, raising=False)


def assert_nothing_written(output: Path) -> None:
    assert not output.exists() and not output.is_symlink()
    if output.parent.exists():
        assert list(output.parent.glob(f".{output.name}*")) == []


class Server:
    """A local HTTP server answering each path with a scripted list of (status, body)."""

    def __init__(self, routes: dict[str, list[tuple[int, bytes]]]):
        self.routes = routes
        self.requests: list[str] = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                server.requests.append(self.path)
                script = server.routes[self.path]
                status, body = script.pop(0) if len(script) > 1 else script[0]
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}{path}"


@pytest.fixture
def serve():
    servers = []

    def start(routes):
        server = Server(routes)
        server.thread.start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.httpd.shutdown()
        server.httpd.server_close()


def test_mirror_copy_keeps_gzip_bytes_and_checks_decompressed_digest(tmp_path):
    mirror = tmp_path / "mirror"
    (mirror / "multi30k").mkdir(parents=True)
    packed = gzip.compress(TEXT, mtime=0)
    (mirror / "multi30k" / "train.de.gz").write_bytes(packed)
    output = tmp_path / "downloads" / "train.de"
    spec = {"url": "http://127.0.0.1:9/unused", "mirror": "multi30k/train.de.gz", "sha256": TEXT_SHA}
    assert fetch(spec, "train.de", output, mirror_dir=mirror) == "mirror"
    assert output.read_bytes() == packed


def test_mirror_from_environment_when_no_directory_given(tmp_path, monkeypatch):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "a.txt").write_bytes(TEXT)
    monkeypatch.setenv(fetch_module.MIRROR_ENV, str(tmp_path / "m"))
    assert fetch({"mirror": "a.txt", "sha256": TEXT_SHA}, "a", tmp_path / "out" / "a", mirror_dir="") == "mirror"
    assert (tmp_path / "out" / "a").read_bytes() == TEXT


def test_checksum_mismatch_names_source_and_both_digests(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "a.gz").write_bytes(gzip.compress(TEXT + b"tampered\n"))
    output = tmp_path / "out" / "a"
    with pytest.raises(DataError) as error:
        fetch({"mirror": "a.gz", "sha256": TEXT_SHA}, "a", output, mirror_dir=tmp_path / "m")
    message = str(error.value)
    assert str(tmp_path / "m" / "a.gz") in message and TEXT_SHA in message
    assert hashlib.sha256(TEXT + b"tampered\n").hexdigest() in message
    assert_nothing_written(output)


def test_truncated_gzip_with_checksum_is_an_error(tmp_path):
    (tmp_path / "m").mkdir()
    packed = gzip.compress(TEXT * 500)
    (tmp_path / "m" / "a.gz").write_bytes(packed[: len(packed) // 2])
    output = tmp_path / "out" / "a"
    with pytest.raises(DataError, match="truncated"):
        fetch({"mirror": "a.gz", "sha256": TEXT_SHA}, "a", output, mirror_dir=tmp_path / "m")
    assert_nothing_written(output)


def test_content_sha256_matches_for_gzip_and_plain(tmp_path):
    (tmp_path / "plain").write_bytes(TEXT)
    (tmp_path / "packed").write_bytes(gzip.compress(TEXT))
    assert content_sha256(tmp_path / "plain") == content_sha256(tmp_path / "packed") == TEXT_SHA


def test_licensed_file_directory_and_environment(tmp_path, monkeypatch):
    licensed = tmp_path / "licensed"
    (licensed / "nist_zh_en").mkdir(parents=True)
    (licensed / "nist_zh_en" / "mt02.zh").write_bytes(TEXT)
    (licensed / "ASPEC" / "ASPEC-JE").mkdir(parents=True)
    assert fetch({"local": "nist_zh_en/mt02.zh", "sha256": TEXT_SHA}, "mt02.zh", tmp_path / "d" / "mt02.zh",
                 licensed_dir=licensed) == "licensed"
    assert (tmp_path / "d" / "mt02.zh").read_bytes() == TEXT and not (tmp_path / "d" / "mt02.zh").is_symlink()
    monkeypatch.setenv(fetch_module.LICENSED_ENV, str(licensed))
    assert fetch({"local": "ASPEC/ASPEC-JE"}, "aspec", tmp_path / "d" / "aspec") == "licensed"
    link = tmp_path / "d" / "aspec"
    assert link.is_symlink() and link.resolve() == (licensed / "ASPEC" / "ASPEC-JE").resolve()


def test_licensed_directory_not_set_says_which_key_path_and_directory(tmp_path, monkeypatch):
    monkeypatch.delenv(fetch_module.LICENSED_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    output = tmp_path / "d" / "train.zh"
    with pytest.raises(DataError) as error:
        fetch({"local": "nist_zh_en/train.zh"}, "train.zh", output, licensed_dir="")
    message = str(error.value)
    assert message.startswith(f"{tmp_path / 'nist_zh_en' / 'train.zh'}: not found")
    assert f"licensed_data_dir is not set: relative local paths are looked for in the working directory {tmp_path}" in message
    assert "NMT_LICENSED_DATA" in message
    assert_nothing_written(output)


def test_relative_local_path_without_licensed_directory_is_below_the_working_directory(tmp_path, monkeypatch):
    """Issue 70: ``local: my-corpus/train.tsv`` with no licensed_data_dir is read from the
    directory Snakemake runs in (its --directory), as the start-up check finds it there."""
    monkeypatch.delenv(fetch_module.LICENSED_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my-corpus").mkdir()
    (tmp_path / "my-corpus" / "train.tsv").write_bytes(TEXT)
    spec = {"local": "my-corpus/train.tsv", "sha256": TEXT_SHA}
    output = tmp_path / "resources" / "train.tsv"
    assert missing_licensed([("corpora.c.downloads.train.tsv", spec, output)], licensed_dir="") is None
    assert fetch(spec, "train.tsv", output, licensed_dir="") == "licensed"
    assert output.read_bytes() == TEXT
    assert json.loads(fetch_module.record_path(output).read_text())["source"] == str(tmp_path / "my-corpus" / "train.tsv")
    # a licensed-data directory, once set, is where relative paths are looked for (NIST, ASPEC)
    (tmp_path / "licensed").mkdir()
    message = missing_licensed([("corpora.c.downloads.train.tsv", spec, tmp_path / "other")], licensed_dir="licensed")
    assert f"licensed_data_dir is licensed ({tmp_path / 'licensed'})" in message
    assert message.splitlines()[1:] == [f"  {Path('licensed') / 'my-corpus' / 'train.tsv'}  (corpora.c.downloads.train.tsv)"]


def test_licensed_file_missing_names_expected_path(tmp_path):
    output = tmp_path / "d" / "train.zh"
    (tmp_path / "licensed").mkdir()
    with pytest.raises(DataError) as error:
        fetch({"local": "nist_zh_en/train.zh", "url": "http://127.0.0.1:9/x"}, "train.zh", output, licensed_dir=tmp_path / "licensed")
    message = str(error.value)
    assert str(tmp_path / "licensed" / "nist_zh_en" / "train.zh") in message and "licensed_data_dir" in message
    assert_nothing_written(output)


def test_download_with_retry_after_server_error(tmp_path, serve):
    server = serve({"/a.txt": [(503, b"busy"), (200, TEXT)]})
    mirror = tmp_path / "empty-mirror"
    mirror.mkdir()
    spec = {"url": server.url("/a.txt"), "mirror": "missing/a.txt", "sha256": TEXT_SHA}
    assert fetch(spec, "a", tmp_path / "d" / "a", mirror_dir=mirror, retry_delay=0) == "url"
    assert (tmp_path / "d" / "a").read_bytes() == TEXT
    assert server.requests == ["/a.txt", "/a.txt"]


def test_client_error_is_not_retried(tmp_path, serve):
    server = serve({"/gone": [(404, b"not found")]})
    output = tmp_path / "d" / "gone"
    with pytest.raises(DataError, match="HTTP 404") as error:
        fetch({"url": server.url("/gone")}, "gone", output, retry_delay=0)
    assert server.url("/gone") in str(error.value) and server.requests == ["/gone"]
    assert_nothing_written(output)


def test_persistent_failure_and_bad_checksum_leave_nothing(tmp_path, serve):
    server = serve({"/down": [(500, b"error")], "/ok": [(200, TEXT)]})
    output = tmp_path / "d" / "x"
    with pytest.raises(DataError, match="after 3 attempts"):
        fetch({"url": server.url("/down")}, "x", output, retry_delay=0)
    assert server.requests == ["/down"] * 3
    assert_nothing_written(output)
    with pytest.raises(DataError, match="sha256 mismatch"):
        fetch({"url": server.url("/ok"), "sha256": "0" * 64}, "x", output, retry_delay=0)
    assert_nothing_written(output)


def test_cli_exit_codes_and_messages(tmp_path, capsys):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "a").write_bytes(TEXT)
    argv = ["--spec", json.dumps({"mirror": "a", "sha256": TEXT_SHA}), "--name", "a", "--output", str(tmp_path / "o" / "a"),
            "--mirror-dir", str(tmp_path / "m")]
    assert fetch_module.main(argv) == 0 and (tmp_path / "o" / "a").read_bytes() == TEXT
    argv = ["--spec", json.dumps({"local": "x/y.txt"}), "--name", "y", "--output", str(tmp_path / "o" / "y")]
    assert fetch_module.main(argv) == 1
    assert "fetch: error:" in capsys.readouterr().err and not (tmp_path / "o" / "y").exists()
    assert fetch_module.main(["--spec", "{not json", "--name", "z", "--output", str(tmp_path / "o" / "z")]) == 1
    assert "--spec: invalid JSON" in capsys.readouterr().err


def registered_mirror_entries() -> list[tuple[str, str, dict]]:
    entries = []
    for config in ("config.yaml", "configs/full.yaml"):
        for corpus, spec in yaml.safe_load((REPO / config).read_text(encoding="utf-8"))["corpora"].items():
            entries += [(corpus, name, entry) for name, entry in spec["downloads"].items() if "mirror" in entry]
    return entries


@pytest.mark.skipif(not MIRROR.is_dir(), reason="no data mirror at ../shared/data")
@pytest.mark.parametrize("corpus, name, entry", registered_mirror_entries(), ids=lambda value: value if isinstance(value, str) else "")
def test_registered_mirror_copies_match_their_sha256(corpus, name, entry):
    assert "sha256" in entry, f"{corpus}.{name} has a mirror copy but no sha256"
    assert content_sha256(MIRROR / entry["mirror"]) == entry["sha256"]


# --------------------------------------------------------------------------- records, fingerprints, licensed check

def test_fetch_records_its_origin_and_fingerprint_follows_content_not_location(tmp_path):
    """A download without sha256: the record holds the source, its size, mtime and digests;
    the fingerprint stays put when the mirror moves (other mtimes, same bytes) or is gone,
    and changes when the mirror file is repaired."""
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir(), new.mkdir()
    damaged = gzip.compress(b"bad \xff\n", mtime=0)
    (old / "a.gz").write_bytes(damaged)
    spec, output = {"mirror": "a.gz", "url": "http://127.0.0.1:9/a"}, tmp_path / "d" / "a"
    assert fetch(spec, "a", output, mirror_dir=old) == "mirror"
    record = json.loads(fetch_module.record_path(output).read_text())
    stat = (old / "a.gz").stat()
    assert (record["origin"], record["source"], record["size"], record["mtime_ns"]) == ("mirror", str(old / "a.gz"), stat.st_size,
                                                                                        stat.st_mtime_ns)
    assert record["source_sha256"] == hashlib.sha256(damaged).hexdigest()
    assert record["sha256"] == hashlib.sha256(b"bad \xff\n").hexdigest()
    first = fetch_module.source_fingerprint(spec, "a", output, mirror_dir=old)
    assert first == f"sha256:{hashlib.sha256(damaged).hexdigest()}" == record["fingerprint"]
    (new / "a.gz").write_bytes(damaged)  # moved: same bytes, another path and mtime
    assert fetch_module.source_fingerprint(spec, "a", output, mirror_dir=new) == first
    assert json.loads(fetch_module.record_path(output).read_text())["source"] == str(new / "a.gz")
    assert fetch_module.source_fingerprint(spec, "a", output, mirror_dir=tmp_path / "gone") == first
    (new / "a.gz").write_bytes(gzip.compress(TEXT))  # repaired
    assert fetch_module.source_fingerprint(spec, "a", output, mirror_dir=new) not in (first, "")
    assert fetch_module.source_fingerprint({**spec, "sha256": TEXT_SHA}, "a", output, mirror_dir=new) == ""


def test_absolute_local_path_needs_no_licensed_directory(tmp_path, monkeypatch):
    monkeypatch.delenv(fetch_module.LICENSED_ENV, raising=False)  # neither given nor in the environment
    source = tmp_path / "elsewhere" / "mt02.zh"
    source.parent.mkdir()
    source.write_bytes(TEXT)
    output = tmp_path / "d" / "mt02.zh"
    assert fetch({"local": str(source), "sha256": TEXT_SHA}, "mt02.zh", output, licensed_dir="") == "licensed"
    assert output.read_bytes() == TEXT
    assert json.loads(fetch_module.record_path(output).read_text())["source"] == str(source)


def test_truncated_gzip_without_checksum_names_the_mirror_file(tmp_path):
    (tmp_path / "m").mkdir()
    packed = gzip.compress(TEXT * 500)
    (tmp_path / "m" / "a.gz").write_bytes(packed[: len(packed) // 2])
    output = tmp_path / "out" / "a"
    with pytest.raises(DataError, match="truncated") as error:
        fetch({"mirror": "a.gz"}, "a", output, mirror_dir=tmp_path / "m")
    assert str(error.value).startswith(str(tmp_path / "m" / "a.gz"))
    assert_nothing_written(output)
    assert not fetch_module.record_path(output).exists()


def test_missing_licensed_lists_every_missing_file_once_with_its_keys(tmp_path):
    licensed, mirror = tmp_path / "licensed", tmp_path / "mirror"
    (licensed / "nist").mkdir(parents=True)
    (licensed / "nist" / "there.zh").write_bytes(TEXT)
    mirror.mkdir()
    (mirror / "m.zh").write_bytes(TEXT)
    fetched = tmp_path / "fetched"
    fetched.write_bytes(TEXT)
    downloads = [
        ("corpora.a.downloads.x", {"local": "nist/x.zh"}, tmp_path / "out" / "x"),
        ("corpora.b.downloads.x", {"local": "nist/x.zh"}, tmp_path / "out" / "bx"),
        ("corpora.a.downloads.there", {"local": "nist/there.zh"}, tmp_path / "out" / "there"),
        ("corpora.a.downloads.done", {"local": "nist/done.zh"}, fetched),
        ("corpora.a.downloads.mirrored", {"local": "nist/m.zh", "mirror": "m.zh"}, tmp_path / "out" / "m"),
        ("corpora.a.downloads.abs", {"local": str(tmp_path / "abs.zh")}, tmp_path / "out" / "abs"),
        ("corpora.a.downloads.web", {"url": "http://127.0.0.1:9/w"}, tmp_path / "out" / "w"),
    ]
    message = missing_licensed(downloads, mirror_dir=mirror, licensed_dir=licensed)
    lines = message.splitlines()
    assert "2 file(s)" in lines[0] and "licensed_data_dir" in lines[0] and "NMT_LICENSED_DATA" in lines[0]
    assert lines[1:] == [f"  {licensed / 'nist' / 'x.zh'}  (corpora.a.downloads.x, corpora.b.downloads.x)",
                         f"  {tmp_path / 'abs.zh'}  (corpora.a.downloads.abs)"]
    unset = missing_licensed(downloads[2:3], mirror_dir=mirror, licensed_dir="")
    assert f"licensed_data_dir is not set: relative local paths are looked for in the working directory {Path.cwd()}" in unset
    assert unset.splitlines()[1:] == [f"  {Path.cwd() / 'nist' / 'there.zh'}  (corpora.a.downloads.there)"]
    assert missing_licensed(downloads[2:5] + downloads[6:], mirror_dir=mirror, licensed_dir=licensed) is None


def test_unchanged_fetch_time_only_for_the_bytes_fetched(tmp_path):
    """A fetched file dated in the future can be dated back to its fetch time while its bytes
    are those recorded; not when they changed, without a record, or for a directory link."""
    import os
    import time

    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "a.gz").write_bytes(gzip.compress(TEXT, mtime=0))
    output = tmp_path / "d" / "a"
    before = time.time()
    fetch({"mirror": "a.gz", "sha256": TEXT_SHA}, "a", output, mirror_dir=tmp_path / "m")
    os.utime(output, (time.time() + 86400, time.time() + 86400))
    fetched = fetch_module.unchanged_fetch_time(output)
    assert fetched is not None and before - 1 <= fetched <= time.time()
    output.write_bytes(gzip.compress(TEXT + b"more\n", mtime=0))
    assert fetch_module.unchanged_fetch_time(output) is None
    assert fetch_module.unchanged_fetch_time(tmp_path / "d" / "never") is None
    licensed = tmp_path / "tree"
    licensed.mkdir()
    fetch({"local": str(licensed)}, "tree", tmp_path / "d" / "tree")
    assert fetch_module.unchanged_fetch_time(tmp_path / "d" / "tree") is None


def test_start_up_dates_back_unchanged_downloads_and_warns_about_other_future_files(tmp_path):
    """workflow_scripts.dag.future_dates (the Snakefile's start-up, issue 34): a download whose
    bytes are those fetched goes back to its fetch time; a changed one and a raw file dated in
    the future are named in one warning with the fix; cluster jobs do nothing."""
    import os
    import time

    from workflow_scripts.dag import future_dates

    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "a.gz").write_bytes(gzip.compress(TEXT, mtime=0))
    downloads = tmp_path / "resources" / "downloads" / "toy"
    for name in ("kept", "changed"):
        fetch({"mirror": "a.gz"}, name, downloads / name, mirror_dir=tmp_path / "m")
    (downloads / "changed").write_bytes(b"other bytes\n")
    raw = tmp_path / "results" / "data" / "toy" / "raw"
    raw.mkdir(parents=True)
    for path in (raw / "train.en", raw / "dev.en"):
        path.write_text("a\n")
    now = time.time()
    for path in (downloads / "kept", downloads / "changed", raw / "train.en"):
        os.utime(path, (now + 2 * 86400, now + 2 * 86400))
    os.utime(raw / "dev.en", (now + 5, now + 5))  # within the tolerance

    assert future_dates.check_future_dates(fetch_module.unchanged_fetch_time, tmp_path, main_process=False, warn=print) == []
    assert os.stat(downloads / "kept").st_mtime > now + 3600

    warned: list[str] = []
    messages = future_dates.check_future_dates(fetch_module.unchanged_fetch_time, tmp_path, now=now, warn=warned.append)
    assert messages == warned and len(messages) == 2
    assert os.stat(downloads / "kept").st_mtime <= now
    assert messages[0].startswith("Warning: resources/downloads/toy/kept was dated in the future (+2.0 d")
    assert "dated back to its fetch time" in messages[0]
    assert os.stat(downloads / "changed").st_mtime > now + 3600 and os.stat(raw / "train.en").st_mtime > now + 3600
    assert messages[1].startswith("Warning: 2 file(s) dated in the future (clock skew?): resources/downloads/toy/changed (+2.0 d),"
                                  " results/data/toy/raw/train.en (+2.0 d).")
    assert "`touch resources/downloads/toy/changed results/data/toy/raw/train.en`" in messages[1]
    assert "snakemake --touch" in messages[1] and "dev.en" not in messages[1] and "\n" not in messages[1]
    # files under 1 MB: snakemake compares them by content, which the warning says (not over 1 MB: tests/test_faults_workflow.py)
    assert "compares files under 1 MB by content" in messages[1] and "rerun nothing while their content" in messages[1]
    assert future_dates.check_future_dates(fetch_module.unchanged_fetch_time, tmp_path / "nothing", now=now,
                                         warn=warned.append) == []


def forced_rerun(output: Path) -> None:
    """What Snakemake does to a job's outputs before --forcerun runs it (and after it fails)."""
    output.unlink()


def test_a_forced_refetch_that_fails_keeps_the_good_download_and_names_the_mirror_path(tmp_path, serve, capsys):
    # fetched from the mirror; then the mirror copy is moved away and the URL is unreachable
    mirror = tmp_path / "mirror"
    (mirror / "zh-en").mkdir(parents=True)
    (mirror / "zh-en" / "cmn.txt").write_bytes(TEXT)
    server = serve({"/cmn.txt": [(503, b"down")]})
    spec = {"url": server.url("/cmn.txt"), "mirror": "zh-en/cmn.txt"}
    output = tmp_path / "downloads" / "tatoeba_zh_en" / "cmn.txt"
    assert fetch(spec, "cmn.txt", output, mirror_dir=mirror, retry_delay=0) == "mirror"
    record = fetch_module.record_path(output).read_text()
    assert fetch_module.kept_path(output) == tmp_path / "downloads" / ".kept" / "tatoeba_zh_en" / "cmn.txt"
    assert fetch_module.kept_path(output).stat().st_ino == output.stat().st_ino  # a hard link: no extra space
    (mirror / "zh-en" / "cmn.txt").rename(tmp_path / "moved.txt")
    forced_rerun(output)
    assert fetch(spec, "cmn.txt", output, mirror_dir=mirror, retry_delay=0, attempts=1) == "kept"
    assert output.read_bytes() == TEXT and fetch_module.record_path(output).read_text() == record
    warning = capsys.readouterr().err
    assert f"its mirror copy {mirror / 'zh-en' / 'cmn.txt'} is missing" in warning
    assert "kept the previous download of 'cmn.txt'" in warning
    # without a kept copy the same failure is an error naming the mirror path, and nothing is written
    fresh = tmp_path / "other" / "tatoeba_zh_en" / "cmn.txt"
    with pytest.raises(DataError, match=r"its mirror copy .*zh-en/cmn\.txt is missing"):
        fetch(spec, "cmn.txt", fresh, mirror_dir=mirror, retry_delay=0, attempts=1)
    assert_nothing_written(fresh)


def fetched_then_forced(tmp_path: Path, serve, second: bytes, status: int):
    """A URL download fetched once (TEXT) and deleted as a forced rerun does; the URL then answers
    ``status`` with ``second``."""
    server = serve({"/a": [(200, TEXT), (status, second)]})
    output = tmp_path / "downloads" / "c" / "a"
    fetch({"url": server.url("/a")}, "a", output, retry_delay=0)
    forced_rerun(output)
    return server, output


def test_a_kept_copy_that_no_longer_matches_its_record_is_not_put_back(tmp_path, serve):
    server, output = fetched_then_forced(tmp_path, serve, b"down", 503)
    fetch_module.kept_path(output).write_bytes(b"damaged")  # the kept file changed since
    with pytest.raises(DataError, match="failed after 1 attempts"):
        fetch({"url": server.url("/a")}, "a", output, retry_delay=0, attempts=1)
    assert_nothing_written(output)


def test_a_new_download_replaces_the_kept_one(tmp_path, serve):
    server, output = fetched_then_forced(tmp_path, serve, b"new content\n", 200)
    fetch({"url": server.url("/a")}, "a", output, retry_delay=0)
    assert output.read_bytes() == fetch_module.kept_path(output).read_bytes() == b"new content\n"


def tar_archive(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_a_damaged_archive_never_replaces_a_good_download(tmp_path, serve):
    """An ``archive: tar`` entry without ``sha256`` fetched once; a forced refetch then gets the
    tar with a flipped byte in its second member header.  Before: the damaged tar replaced the
    output and the kept copy, the next extract failed and Snakemake deleted the good raw files.
    Now the refetch puts the kept copy back, and without one it fails, writing nothing."""
    good = tar_archive({"a.en": TEXT, "a.de": TEXT})
    damaged = bytearray(good)
    damaged[2 * tarfile.BLOCKSIZE + 1] ^= 0x01  # the second header's name
    server = serve({"/t.tar": [(200, good), (200, bytes(damaged))]})
    spec = {"url": server.url("/t.tar"), "archive": "tar"}
    output = tmp_path / "downloads" / "c" / "t.tar"
    assert fetch(spec, "t.tar", output, retry_delay=0) == "url"
    forced_rerun(output)
    assert fetch(spec, "t.tar", output, retry_delay=0) == "kept"
    assert output.read_bytes() == fetch_module.kept_path(output).read_bytes() == good
    assert server.requests == ["/t.tar", "/t.tar"]
    fresh = tmp_path / "other" / "c" / "t.tar"
    with pytest.raises(DataError, match=r"t\.tar: not a readable tar archive \(ReadError: damaged tar archive: the member "
                                        r"header at byte 1,024 is invalid \(bad checksum\)\)"):
        fetch(spec, "t.tar", fresh, retry_delay=0)
    assert_nothing_written(fresh)
