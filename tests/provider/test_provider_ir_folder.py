"""One definition of an IR folder (ovgenai_c.ir_folder): the catalog, the pipeline's model check and the
default model's conversion check all decide with it, so they cannot disagree about a folder."""
from __future__ import annotations

import pytest

from ovgenai_c import errors, models
from ovgenai_c.ir_folder import IR_FILES, is_ir_folder, missing_ir_files
from ovgenai_c.pipeline import check_model_path
from ovgenai_c.provider import Catalog
from ovgenai_c.provider.model_info import model_format


def _folder(path, files):
    path.mkdir(parents=True)
    for name in files:
        (path / name).write_text("x")
    return path


def test_a_complete_folder_is_an_ir_folder_everywhere(tmp_path):
    d = _folder(tmp_path / "root" / "m", IR_FILES)
    assert is_ir_folder(d) and missing_ir_files(d) == []
    assert model_format(d) == "ir"
    assert check_model_path(d) == str(d)
    assert [e.name for e in Catalog(tmp_path / "root").list()] == ["m"]


@pytest.mark.parametrize("lacking", IR_FILES)
def test_a_folder_lacking_any_one_file_is_no_ir_folder_anywhere(tmp_path, lacking):
    d = _folder(tmp_path / "root" / "m", [n for n in IR_FILES if n != lacking])
    assert not is_ir_folder(d) and missing_ir_files(d) == [lacking]
    assert model_format(d) is None  # the catalog's view
    assert Catalog(tmp_path / "root").list() == []
    with pytest.raises(errors.ModelNotFoundError, match=f"lacks {lacking} "):  # the pipeline's view
        check_model_path(d)
    assert models.missing_ir_files is missing_ir_files and models.IR_FILES is IR_FILES  # the converter's view


def test_not_a_folder(tmp_path):
    f = tmp_path / "file.xml"
    f.write_text("x")
    assert not is_ir_folder(f) and missing_ir_files(f) == list(IR_FILES)
    assert not is_ir_folder(tmp_path / "nope")
