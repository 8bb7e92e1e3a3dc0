"""calibrate builds BERT's MLM head as the zoo defines it: on the masked positions only."""

import torch

from embsim.calibrate.modules import LanguageModel, build_layer, example_inputs, masked_rows
from embsim.calibrate.spec import model_spec
from embsim.workload.costs import Shape, tokens_for


def test_head_layers_time_on_the_gathered_rows_as_the_kernel_model_counts_them():
    m = model_spec("bert-base")
    gen = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, 30522, (2, 64), generator=gen)
    for layer in m.layers:
        if layer.name in ("mlm_transform", "mlm_output", "mlm_loss"):
            rows = tokens_for(layer.params, Shape(2, 64, 4))
            assert rows == masked_rows(128, 0.15) == 19
            first = example_inputs(layer, m, 2, 64, tokens, gen)[0]
            assert first.shape[0] == rows
            build_layer(layer, m)(*example_inputs(layer, m, 2, 64, tokens, gen))


def test_whole_step_gathers_before_the_head():
    torch.manual_seed(0)
    lm = LanguageModel(model_spec("bert-base"))
    seen = []
    lm.body.layers[-1].register_forward_hook(lambda mod, inp, out: seen.append(out.shape))
    tokens = torch.randint(0, 30522, (2, 64))
    lm(tokens, tokens).backward()
    assert seen == [torch.Size([19, 30522])]
