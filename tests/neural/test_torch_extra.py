"""Without torch, fstcrf.torch stops at once with an error naming the extra."""

import subprocess
import sys


def test_fstcrf_torch_without_torch_names_the_extra():
    code = (
        "import sys\nsys.modules['torch'] = None\n"
        "from fstcrf.errors import MissingExtraError\n"
        "try:\n    import fstcrf.torch\nexcept MissingExtraError as error:\n    print(error)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "fstcrf.torch needs torch, which is not installed: pip install 'fstcrf[torch]'" in result.stdout
