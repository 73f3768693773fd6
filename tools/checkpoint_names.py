"""The official LaCT NVS checkpoints (Hugging Face repository airsplay/lact_nvs) and the config each needs.

Source: the official repository's lact_nvs/README.md (a1600012888/LaCT), section "Download Pre-trained
checkpoints": object checkpoints obj_res{256,512,1024}.pt are run by inference.py without --config, so its default
config/lact_l24_d768_ttt2x.yaml applies; scene checkpoints scene_res{128x128,256x256,512x512}.pt use
config/lact_l24_d768_ttt2x.yaml ("trained with 32 inputs"), scene_res{72x128,144x256,288x512,536x960}.pt use
config/lact_l24_d768_ttt4x.yaml ("trained longer and trained with 64 inputs"). File names give the size as HxW.
The object checkpoints' input view count is not stated there, so it is not recorded.
"""
import re

# The official configs (lact_nvs/config/*.yaml), as core/config.cpp's builtin_model_config builds them.
BUILTIN_CONFIGS = ("lact_l24_d768_ttt2x", "lact_l24_d768_ttt4x", "lact_l14_d768_ttt2x")

SCENE_TTT2X_SIZES = ("128x128", "256x256", "512x512")
SCENE_TTT4X_SIZES = ("72x128", "144x256", "288x512", "536x960")
OBJECT_SIDES = ("256", "512", "1024")


def builtin_config(name):
    """The official config of that name as the dict the YAML file loads to."""
    layers, inter = {"lact_l24_d768_ttt2x": (24, 2), "lact_l24_d768_ttt4x": (24, 4),
                     "lact_l14_d768_ttt2x": (14, 2)}[name]
    return {
        "patch_size": 8, "dim": 768, "layers": layers,
        "block_config": [
            {"type": "model.SelfAttention", "length_dim": "l", "params": {"head_dim": 64, "use_qk_norm": True}},
            {"type": "lact_ttt.FastWeightGluMLPMultihead", "length_dim": "vl",
             "params": {"head_dim": 768, "inter_multi": inter, "base_lr": 0.01, "muon_update_steps": 5}},
            {"type": "model.MLP", "length_dim": "vl", "params": {"inter_multi": 4}},
        ],
    }


def official_checkpoint(file_name):
    """{config, kind, image_size, input_views} for an official checkpoint's file name, else None."""
    m = re.fullmatch(r"obj_res(\d+)\.pt", file_name)
    if m and m.group(1) in OBJECT_SIDES:
        side = m.group(1)
        return {"config": "lact_l24_d768_ttt2x", "kind": "object", "image_size": "%sx%s" % (side, side)}
    m = re.fullmatch(r"scene_res(\d+x\d+)\.pt", file_name)
    if m and m.group(1) in SCENE_TTT2X_SIZES:
        return {"config": "lact_l24_d768_ttt2x", "kind": "scene", "image_size": m.group(1), "input_views": 32}
    if m and m.group(1) in SCENE_TTT4X_SIZES:
        return {"config": "lact_l24_d768_ttt4x", "kind": "scene", "image_size": m.group(1), "input_views": 64}
    return None
