from embsim.words import counted


def test_one_is_singular_and_every_other_count_plural():
    assert counted(1, "GPU") == "1 GPU"
    assert counted(16, "GPU") == "16 GPUs"
    assert counted(0, "lookup") == "0 lookups"
    assert counted(2, "colocated server") == "2 colocated servers"
    assert counted(1_024, "GPU") == "1,024 GPUs"
    assert counted(1.5, "step") == "1.5 steps"
    assert counted(3, "child", "children") == "3 children"
