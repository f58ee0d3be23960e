"""The workflow's corpus formats decode lines with nmtmodels.files, the library's one UTF-8 line
decoder: a bad byte is named as the library names it (the library side:
nmtmodels/tests/test_translate_stream.py)."""
from __future__ import annotations

import pytest

from nmtmodels.files import DataError, read_lines
from workflow_scripts.data import formats


def test_the_workflow_formats_name_a_bad_line_as_the_library_does(tmp_path):
    bad = tmp_path / "bad.en"
    bad.write_bytes(b"lower newer\nwid \xff est\nlowest\n")
    expected = f"{bad}:2: invalid UTF-8 (invalid start byte at byte 4)"
    with pytest.raises(DataError) as from_reader:
        list(read_lines(bad))
    with pytest.raises(DataError) as from_formats:
        list(formats._read_plain(formats._Downloads(tmp_path, {}), "bad.en"))
    assert str(from_reader.value) == str(from_formats.value) == expected
