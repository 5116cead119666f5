import json

from streamfs.bench.gdm import main
from tests.external import require_dataset


def test_digits_picture_goes_where_out_says(tmp_path, capsys):
    require_dataset("usps_test2007")
    out = tmp_path / "pair.png"
    main(["digits", "--out", str(out), "--max-iter", "2"])
    assert json.loads(capsys.readouterr().out)["png"] == str(out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
