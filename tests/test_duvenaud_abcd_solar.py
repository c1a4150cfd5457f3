"""The solar report's checks that need no fit (paper_figures/duvenaud_abcd_solar.py): Fig 4.1's two features on the
shipped series, and the sentence verdicts."""

from paper_figures import duvenaud_abcd_solar as solar


def test_the_data_show_the_cycle_and_the_maunder_minimum():
    x, y = solar.load()
    assert len(x) == 402 and x[0] == 1610.5 and x[-1] == 2011.5
    assert [c["verdict"] for c in solar.data_claims(x, y)] == ["PASS", "PASS"]


def test_sentence_verdicts():
    printed = {"text": "A constant. This function applies from 1644 until 1713."}
    assert solar.verdict(printed, printed["text"]) == "SAME"
    assert solar.verdict(printed, "A constant. This function applies from 1645 until 1715.") == (
        "SAME WORDS, NUMBERS DIFFER"
    )
    assert solar.verdict(printed, "A smooth function.") == "DIFFERS"
    assert solar.verdict(printed, "-") == "NOT A COMPONENT OF OURS"
