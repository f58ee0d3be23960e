"""workflow_scripts.data.parallel: order, in-process mode, and errors from the caller and the workers."""
from __future__ import annotations

import operator
import os

import pytest

from nmtmodels.files import DataError
from workflow_scripts.data.chars import line_encoder
from workflow_scripts.data.parallel import WorkerError, chunked, parallel_map


def test_chunked_keeps_every_item_in_order():
    assert list(chunked(range(7), 3)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(chunked([], 3)) == []


def test_output_order_is_input_order_across_many_chunks():
    words = [f"word{i}" for i in range(50)]
    result = list(parallel_map(operator.methodcaller, ("upper",), words, threads=2, chunk_size=3))
    assert result == [word.upper() for word in words]


def test_one_thread_runs_in_the_calling_process():
    result = list(parallel_map(lambda: (lambda _item: os.getpid()), (), range(3), threads=1))
    assert result == [os.getpid()] * 3


def test_input_error_is_raised_in_the_caller_with_its_type():
    def lines():
        yield "a"
        raise DataError("input.txt", "invalid UTF-8", 2)

    with pytest.raises(DataError, match=r"input\.txt:2"):
        list(parallel_map(operator.methodcaller, ("upper",), lines(), threads=2))


def test_error_applying_the_function_reaches_the_caller():
    with pytest.raises(UnicodeEncodeError):
        list(parallel_map(operator.methodcaller, ("encode", "ascii"), ["ok", "caf\u00e9"], threads=2, chunk_size=1))


def test_error_building_the_function_reaches_the_caller_instead_of_restarting_workers():
    with pytest.raises(ZeroDivisionError):
        list(parallel_map(operator.truediv, (1, 0), ["a"], threads=2))


def test_data_error_in_a_worker_arrives_as_itself_with_file_and_line(tmp_path):
    bad_vocab = tmp_path / "vocab"
    bad_vocab.write_text("a 1\nnot a count\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"vocab:2"):
        list(parallel_map(line_encoder, (str(bad_vocab),), ["a"], threads=2))


class _Unpicklable(Exception):
    def __init__(self):
        super().__init__("cannot travel")
        self.callback = lambda: None  # lambdas do not pickle


def _raise_unpicklable(_line):
    raise _Unpicklable()


def _unpicklable_factory():
    return _raise_unpicklable


def test_unpicklable_worker_error_arrives_as_worker_error():
    with pytest.raises(WorkerError, match=r"_Unpicklable: cannot travel"):
        list(parallel_map(_unpicklable_factory, (), ["a"], threads=2))


@pytest.mark.parametrize("threads", [0, -1])
def test_threads_must_be_positive(threads):
    with pytest.raises(ValueError, match="threads"):
        list(parallel_map(operator.methodcaller, ("upper",), ["a"], threads=threads))
