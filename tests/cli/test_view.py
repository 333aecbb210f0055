"""fstcrf view end to end: the page the library makes of the model's output on the
file (its first N sentences, a title, a threshold), for single and composed models, to
a file or standard output; an output that is the input is refused."""

from fstcrf.cli import main
from fstcrf.corpus.conll import read_conll
from fstcrf.corpus.synthetic import DATA_DIR
from fstcrf.model.compose import load_any
from fstcrf.pictures.html import view_page
from fstcrf.pictures.tagged import chunk_types, tagged_sentences

TEST = str(DATA_DIR / "demo_test.txt")


def test_view_writes_the_librarys_page(tmp_path, demo_chunker):
    output = tmp_path / "page.html"
    assert main(["-q", "view", str(demo_chunker), TEST, "--max-sentences", "7", "-o", str(output)]) == 0
    model = load_any(demo_chunker)
    sentences = read_conll(TEST).sentences[:7]
    expected = view_page("chunker.model on demo_test.txt", tagged_sentences(model, sentences), chunk_types(model))
    assert output.read_text(encoding="utf-8") == expected


def test_view_of_a_composed_model_with_a_title_and_threshold_on_standard_output(capsys, demo_joint):
    assert (
        main(
            [
                "view",
                str(demo_joint),
                TEST,
                "--max-sentences",
                "3",
                "--low-confidence",
                "0.99",
                "--title",
                "J",
                "-o",
                "-",
            ]
        )
        == 0
    )
    joint = load_any(demo_joint)
    tagged = tagged_sentences(joint, read_conll(TEST).sentences[:3])
    assert capsys.readouterr().out == view_page("J", tagged, chunk_types(joint), 0.99)


def test_view_never_writes_over_its_input(tmp_path, capsys, demo_chunker):
    copy = tmp_path / "test.txt"
    copy.write_text(open(TEST, encoding="utf-8").read(), encoding="utf-8")
    assert main(["view", str(demo_chunker), str(copy), "-o", str(copy)]) == 2
    assert "is the same file as the input" in capsys.readouterr().err
    assert copy.read_text(encoding="utf-8") == open(TEST, encoding="utf-8").read()


def test_view_writes_a_page_or_serves_one_to_edit_not_both(capsys, demo_chunker, tmp_path):
    for options in ([], ["--edit", "-o", str(tmp_path / "page.html")]):
        assert main(["view", str(demo_chunker), TEST, *options]) == 2
        assert "give -o OUTPUT to write the page, or --edit" in capsys.readouterr().err
    assert not (tmp_path / "page.html").exists()
