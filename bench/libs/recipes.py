"""The bench/libs corpus: tiny random models from timm, diffusers, torchvision, torch_geometric and kornia.

Every model is built from its library's own constructors with random weights (no pretrained weights: the
machine has no network besides package registries), and kept tiny so that one Dynamo census (eval under
no_grad, train with backward) takes seconds on a 2-core CPU. The rows are chosen for control flow that
Dynamo meets in real code: detection heads, anchor matching and losses, graph pooling, augmentation
pipelines, dynamic image sizes, stochastic depth (`drop_path_rate > 0` in train), diffusion conditioning,
scheduler steps and classifier-free guidance.

A recipe is `build()` (the nn.Module, seeded) and `inputs(train)` (positional and keyword arguments, seeded,
fresh tensors on each call). Where a library's API is a function or needs a loop around a model (a sampler
step, an augmentation followed by a loss), a small wrapper module here calls the library; frames of this
file are not library frames, so a break here is no site. Everything here imports torch and the libraries
lazily, inside the functions: the table itself (names, libraries, notes) loads with the standard library.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

LIBS = ("timm", "diffusers", "torchvision", "torch_geometric", "kornia")


@dataclasses.dataclass
class Recipe:
    name: str
    lib: str  # import name of the library package (the sites' package)
    build: Callable[[], Any]
    inputs: Callable[[bool], tuple[tuple, dict]]
    note: str = ""  # what control flow the row is there for


RECIPES: list[Recipe] = []


def _g(seed: int = 0):
    import torch

    g = torch.Generator().manual_seed(seed)
    return g


def _img(b=2, c=3, h=32, w=32, seed=0):
    import torch

    return torch.rand(b, c, h, w, generator=_g(seed))


def _seeded(fn):
    """Build under a fixed seed, so that every arm of a row starts from the same random weights."""
    def build():
        import torch

        torch.manual_seed(0)
        return fn()
    return build


def _images_only(b=2, h=32, w=32):
    return lambda train: ((_img(b, 3, h, w),), {})


# ---------------------------------------------------------------------------------------------------------
# timm: create_model(name, pretrained=False) with tiny dimensions; drop_path_rate > 0 (stochastic depth is
# active in train mode), small images


def _timm(name: str, lib_kwargs: dict, note: str, img=32, dyn_size=None):
    def build():
        import timm

        return timm.create_model(name, pretrained=False, num_classes=10, **lib_kwargs)

    def inputs(train):
        h, w = dyn_size if dyn_size else (img, img)
        return (_img(2, 3, h, w),), {}

    RECIPES.append(Recipe(f"timm_{name.split('.')[0]}", "timm", _seeded(build), inputs, note))


_VIT = dict(img_size=32, patch_size=8, embed_dim=32, depth=2, num_heads=2, drop_path_rate=0.1)
_timm("vit_tiny_patch16_224", _VIT, "ViT, stochastic depth")
_timm("deit_tiny_distilled_patch16_224", _VIT, "DeiT distilled: two heads, train/eval branch on the distilled token")
_timm("vit_small_patch16_224", dict(_VIT, dynamic_img_size=True, class_token=True), "ViT with dynamic_img_size: "
      "position embeddings resampled from the input size", dyn_size=(40, 24))
_timm("beit_base_patch16_224", dict(_VIT, use_rel_pos_bias=True), "BEiT: relative position bias")
_timm("eva02_tiny_patch14_224", dict(img_size=28, patch_size=14, embed_dim=32, depth=2, num_heads=2,
                                     drop_path_rate=0.1), "EVA-02: rotary embeddings, SwiGLU", img=28)
_timm("cait_xxs24_224", dict(img_size=32, patch_size=8, embed_dim=32, depth=2, num_heads=2, depth_token_only=1,
                             drop_path_rate=0.1), "CaiT: class-attention blocks, layer scale")
_timm("swin_tiny_patch4_window7_224", dict(img_size=32, patch_size=4, window_size=4, embed_dim=16, depths=(1, 1),
                                          num_heads=(1, 2), drop_path_rate=0.1), "Swin: shifted windows, padding")
_timm("convnext_atto", dict(depths=(1, 1, 1, 1), dims=(8, 16, 24, 32), drop_path_rate=0.1),
      "ConvNeXt: layer scale, stochastic depth")
_timm("efficientnet_b0", dict(drop_path_rate=0.1),
      "EfficientNet: drop connect, SE", img=32)
_timm("resnet18", dict(drop_path_rate=0.1, drop_block_rate=0.1), "ResNet with DropBlock and stochastic depth")
_timm("levit_128s", dict(img_size=32, embed_dim=(16, 32, 48), key_dim=8, num_heads=(1, 2, 3), depth=(1, 1, 1),
                         drop_path_rate=0.1), "LeViT: attention-bias cache that differs in train and eval")
_timm("mobilevit_xxs", dict(drop_path_rate=0.1), "MobileViT: unfold/fold with interpolation when the size "
      "does not divide", img=40)
_timm("maxvit_pico_rw_256", dict(img_size=64, drop_path_rate=0.1), "MaxViT: block and grid attention", img=64)
_timm("poolformer_s12", dict(drop_path_rate=0.1),
      "PoolFormer (MetaFormer)")
_timm("mixer_s32_224", dict(img_size=64, drop_path_rate=0.1),
      "MLP-Mixer", img=64)
_timm("xcit_nano_12_p16_224", dict(img_size=32, patch_size=16, embed_dim=32, depth=2, num_heads=2,
                                   drop_path_rate=0.1), "XCiT: cross-covariance attention, Fourier pos. enc.")
_timm("fastvit_t8", dict(layers=(1, 1, 1, 1), drop_path_rate=0.1),
      "FastViT: reparameterizable blocks")
_timm("hiera_tiny_224", dict(img_size=64, embed_dim=16, num_heads=1, stages=(1, 1, 1, 1), drop_path_rate=0.1),
      "Hiera: mask units, unroll/reroll", img=64)



def _volo():
    from timm.models.volo import VOLO

    return VOLO(layers=(1, 1, 1, 1), img_size=32, num_classes=10, embed_dims=(16, 32, 32, 32), num_heads=(1, 2, 2, 2),
                use_mix_token=True, global_pool="token", drop_path_rate=0.1)


def _volo_wrapped():
    import torch

    class VoloTrain(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.m = _volo()

        def forward(self, x):
            if not self.training:
                return self.m(x)
            cls, aux, _box = self.m.forward_train(x)  # class-token features, token logits, mix box
            return cls.sum(1, keepdim=True) + aux.mean(1)

    return VoloTrain()


RECIPES.append(Recipe("timm_volo_mix_token", "timm", _seeded(_volo_wrapped), _images_only(2, 32, 32),
                      "VOLO forward_train with use_mix_token: np.random.beta box, token mixing in train"))


def _naflex():
    import timm

    return timm.create_model("naflexvit_base_patch16_gap", pretrained=False, num_classes=10, embed_dim=32, depth=2,
                             num_heads=2, drop_path_rate=0.1)


def _naflex_inputs(train):
    import torch

    g = _g(11)
    n = 6
    coord = torch.tensor([[i // 3, i % 3] for i in range(n)]).unsqueeze(0).repeat(2, 1, 1)
    valid = torch.ones(2, n, dtype=torch.bool)
    valid[1, 4:] = False  # the second image has 4 patches: padded NaFlex batch
    return ({"patches": torch.randn(2, n, 16 * 16 * 3, generator=g), "patch_coord": coord, "patch_valid": valid},), {}


RECIPES.append(Recipe("timm_naflexvit", "timm", _seeded(_naflex), _naflex_inputs,
                      "NaFlexViT on a padded NaFlex batch: patch coordinates, validity mask, grid sizes from the data"))


def _timm_mixup():
    import torch
    import timm
    from timm.data import Mixup
    from timm.loss import SoftTargetCrossEntropy

    class MixupStep(torch.nn.Module):
        """timm's training step: Mixup/CutMix on the batch and the soft-target loss."""

        def __init__(self):
            super().__init__()
            self.m = timm.create_model("resnet18", pretrained=False, num_classes=10)
            self.mixup = Mixup(mixup_alpha=0.8, cutmix_alpha=1.0, label_smoothing=0.1, num_classes=10)
            self.loss = SoftTargetCrossEntropy()

        def forward(self, x, y):
            x, t = self.mixup(x, y)
            return self.loss(self.m(x), t)

    return MixupStep()


RECIPES.append(Recipe("timm_mixup_train_step", "timm", _seeded(_timm_mixup),
                      lambda train: ((_img(2, 3, 32, 32), __import__("torch").tensor([1, 7])), {}),
                      "timm.data.Mixup (numpy random lambda, cutmix boxes) + SoftTargetCrossEntropy"))


def _timm_erasing():
    import torch
    from timm.data.random_erasing import RandomErasing

    class Erase(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 3, 3, padding=1)
            self.erase = RandomErasing(probability=1.0, mode="pixel", max_count=2, device="cpu")

        def forward(self, x):
            return self.erase(self.conv(x))

    return Erase()


RECIPES.append(Recipe("timm_random_erasing", "timm", _seeded(_timm_erasing), _images_only(),
                      "timm.data.RandomErasing on a batch: Python random per image, rejection loop"))

# ---------------------------------------------------------------------------------------------------------
# diffusers: tiny configs of the denoisers and autoencoders; a classifier-free-guidance sampler step


def _unet_cond():
    from diffusers import UNet2DConditionModel

    return UNet2DConditionModel(sample_size=8, in_channels=4, out_channels=4, layers_per_block=1,
                                block_out_channels=(8, 16), down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
                                up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"), cross_attention_dim=16,
                                attention_head_dim=2, norm_num_groups=4)


def _unet_inputs(train):
    import torch

    g = _g(1)
    return (torch.randn(2, 4, 8, 8, generator=g), torch.tensor([10, 500])), {
        "encoder_hidden_states": torch.randn(2, 5, 16, generator=g)}


RECIPES.append(Recipe("diffusers_unet2d_cond", "diffusers", _seeded(_unet_cond), _unet_inputs,
                      "UNet2DConditionModel: cross-attention conditioning, timestep embedding"))


def _unet_sdxl():
    from diffusers import UNet2DConditionModel

    return UNet2DConditionModel(sample_size=8, in_channels=4, out_channels=4, layers_per_block=1,
                                block_out_channels=(8, 16), down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
                                up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"), cross_attention_dim=16,
                                attention_head_dim=2, norm_num_groups=4, addition_embed_type="text_time",
                                addition_time_embed_dim=4, projection_class_embeddings_input_dim=8 + 6 * 4,
                                transformer_layers_per_block=(1, 2), use_linear_projection=True)


def _unet_sdxl_inputs(train):
    import torch

    g = _g(12)
    return (torch.randn(2, 4, 9, 9, generator=g), torch.tensor([10, 500])), {  # odd size: forward_upsample_size
        "encoder_hidden_states": torch.randn(2, 5, 16, generator=g),
        "encoder_attention_mask": torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]]),
        "added_cond_kwargs": {"text_embeds": torch.randn(2, 8, generator=g),
                              "time_ids": torch.tensor([[9., 9., 0., 0., 9., 9.]] * 2)}}


RECIPES.append(Recipe("diffusers_unet2d_cond_sdxl", "diffusers", _seeded(_unet_sdxl), _unet_sdxl_inputs,
                      "SDXL-style UNet: text_time added conditioning, padded text mask, odd latent size "
                      "(upsample sizes forwarded)"))


def _controlnet():
    import torch
    from diffusers import ControlNetModel

    class ControlledUNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.unet = _unet_cond()
            self.controlnet = ControlNetModel.from_unet(self.unet, conditioning_embedding_out_channels=(4, 8))

        def forward(self, sample, t, encoder_hidden_states, cond):
            down, mid = self.controlnet(sample, t, encoder_hidden_states=encoder_hidden_states,
                                        controlnet_cond=cond, conditioning_scale=0.8, guess_mode=False,
                                        return_dict=False)
            return self.unet(sample, t, encoder_hidden_states=encoder_hidden_states,
                             down_block_additional_residuals=down, mid_block_additional_residual=mid).sample

    return ControlledUNet()


def _controlnet_inputs(train):
    import torch

    g = _g(13)
    return (torch.randn(2, 4, 8, 8, generator=g), torch.tensor([10, 500]), torch.randn(2, 5, 16, generator=g),
            torch.rand(2, 3, 16, 16, generator=g)), {}


RECIPES.append(Recipe("diffusers_controlnet", "diffusers", _seeded(_controlnet), _controlnet_inputs,
                      "ControlNet residuals into a UNet: conditioning embedding, scaled residual lists"))

def _unet2d():
    from diffusers import UNet2DModel

    return UNet2DModel(sample_size=8, in_channels=3, out_channels=3, layers_per_block=1, block_out_channels=(8, 16),
                       down_block_types=("DownBlock2D", "AttnDownBlock2D"), up_block_types=("AttnUpBlock2D", "UpBlock2D"),
                       norm_num_groups=4, attention_head_dim=4, class_embed_type=None)


RECIPES.append(Recipe("diffusers_unet2d", "diffusers", _seeded(_unet2d),
                      lambda train: ((_img(2, 3, 8, 8), __import__("torch").tensor([3, 700])), {}),
                      "UNet2DModel: unconditional, attention blocks, scalar-or-tensor timestep handling"))


def _unet2d_class():
    from diffusers import UNet2DModel

    return UNet2DModel(sample_size=8, in_channels=3, out_channels=3, layers_per_block=1, block_out_channels=(8, 16),
                       down_block_types=("DownBlock2D", "DownBlock2D"), up_block_types=("UpBlock2D", "UpBlock2D"),
                       norm_num_groups=4, num_class_embeds=5)


RECIPES.append(Recipe("diffusers_unet2d_class", "diffusers", _seeded(_unet2d_class),
                      lambda train: ((_img(2, 3, 8, 8), 250), {"class_labels": __import__("torch").tensor([1, 3])}),
                      "UNet2DModel with class conditioning and a Python-int timestep"))


def _dit():
    from diffusers import DiTTransformer2DModel

    return DiTTransformer2DModel(num_attention_heads=2, attention_head_dim=8, in_channels=4, out_channels=4,
                                 num_layers=2, sample_size=8, patch_size=2, num_embeds_ada_norm=100)


def _dit_inputs(train):
    import torch

    g = _g(2)
    return (torch.randn(2, 4, 8, 8, generator=g),), {"timestep": torch.tensor([5, 50]),
                                                     "class_labels": torch.tensor([1, 7])}


RECIPES.append(Recipe("diffusers_dit", "diffusers", _seeded(_dit), _dit_inputs,
                      "DiT: adaLN-zero conditioning on class and timestep, unpatchify"))


def _pixart():
    from diffusers import PixArtTransformer2DModel

    return PixArtTransformer2DModel(num_attention_heads=2, attention_head_dim=8, in_channels=4, out_channels=8,
                                    num_layers=2, sample_size=8, patch_size=2, cross_attention_dim=16,
                                    caption_channels=16, norm_num_groups=4)


def _pixart_inputs(train):
    import torch

    g = _g(3)
    return (torch.randn(2, 4, 8, 8, generator=g),), {
        "encoder_hidden_states": torch.randn(2, 5, 16, generator=g), "timestep": torch.tensor([5, 50]),
        "added_cond_kwargs": {"resolution": None, "aspect_ratio": None},
        "encoder_attention_mask": torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])}


RECIPES.append(Recipe("diffusers_pixart", "diffusers", _seeded(_pixart), _pixart_inputs,
                      "PixArt transformer: caption projection, padded text mask turned into a bias"))


def _sd3():
    from diffusers import SD3Transformer2DModel

    return SD3Transformer2DModel(sample_size=8, patch_size=2, in_channels=4, num_layers=2, attention_head_dim=8,
                                 num_attention_heads=2, joint_attention_dim=16, caption_projection_dim=16,
                                 pooled_projection_dim=8, out_channels=4, pos_embed_max_size=16)


def _sd3_inputs(train):
    import torch

    g = _g(4)
    return (torch.randn(2, 4, 8, 8, generator=g),), {
        "encoder_hidden_states": torch.randn(2, 5, 16, generator=g), "pooled_projections": torch.randn(2, 8, generator=g),
        "timestep": torch.tensor([5, 50])}


RECIPES.append(Recipe("diffusers_sd3", "diffusers", _seeded(_sd3), _sd3_inputs,
                      "SD3 MMDiT: joint attention, cropped position embeddings"))


def _flux():
    from diffusers import FluxTransformer2DModel

    return FluxTransformer2DModel(patch_size=1, in_channels=8, num_layers=1, num_single_layers=1, attention_head_dim=8,
                                  num_attention_heads=2, joint_attention_dim=16, pooled_projection_dim=8,
                                  guidance_embeds=True, axes_dims_rope=(2, 2, 4))


def _flux_inputs(train):
    import torch

    g = _g(5)
    n_img, n_txt = 16, 4
    return (torch.randn(1, n_img, 8, generator=g),), {
        "encoder_hidden_states": torch.randn(1, n_txt, 16, generator=g),
        "pooled_projections": torch.randn(1, 8, generator=g), "timestep": torch.tensor([0.5]),
        "img_ids": torch.randint(0, 4, (n_img, 3), generator=g).float(), "txt_ids": torch.zeros(n_txt, 3),
        "guidance": torch.tensor([3.5])}


RECIPES.append(Recipe("diffusers_flux", "diffusers", _seeded(_flux), _flux_inputs,
                      "Flux: rotary position ids, guidance embedding, single and dual stream blocks"))


def _vae():
    from diffusers import AutoencoderKL

    return AutoencoderKL(in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
                         up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"), block_out_channels=(8, 16),
                         latent_channels=4, norm_num_groups=4, sample_size=16)


def _vae_inputs(train):
    return (_img(2, 3, 16, 16),), {"sample_posterior": True, "generator": None}


RECIPES.append(Recipe("diffusers_vae", "diffusers", _seeded(_vae), _vae_inputs,
                      "AutoencoderKL: posterior sampling, mid-block attention"))


def _vq():
    from diffusers import VQModel

    return VQModel(in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
                   up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"), block_out_channels=(8, 16),
                   latent_channels=4, num_vq_embeddings=16, norm_num_groups=4, sample_size=16)


RECIPES.append(Recipe("diffusers_vq", "diffusers", _seeded(_vq), lambda train: ((_img(2, 3, 16, 16),), {}),
                      "VQModel: codebook lookup (argmin), straight-through estimator"))


def _cfg_sampler(scheduler_cls: str):
    def build():
        import torch
        import diffusers

        class CFGStep(torch.nn.Module):
            """Two denoising steps of a sampler: the batch doubled for the unconditional branch, the guidance
            mix, and the scheduler's step (index lookup of the timestep, sigma tables)."""

            def __init__(self):
                super().__init__()
                self.unet = _unet_cond()
                self.scheduler = getattr(diffusers, scheduler_cls)(num_train_timesteps=100)
                self.scheduler.set_timesteps(4)
                self.guidance = 3.0

            def forward(self, latents, text, uncond):
                self.scheduler._step_index = None  # every call starts from the first step
                for t in self.scheduler.timesteps[:2]:
                    inp = torch.cat([latents] * 2)
                    inp = self.scheduler.scale_model_input(inp, t)
                    eps = self.unet(inp, t, encoder_hidden_states=torch.cat([uncond, text])).sample
                    e_u, e_c = eps.chunk(2)
                    eps = e_u + self.guidance * (e_c - e_u)
                    latents = self.scheduler.step(eps, t, latents).prev_sample
                return latents

        return CFGStep()

    def inputs(train):
        import torch

        g = _g(6)
        return (torch.randn(1, 4, 8, 8, generator=g), torch.randn(1, 5, 16, generator=g),
                torch.randn(1, 5, 16, generator=g)), {}

    return _seeded(build), inputs


for _sch in ("DDIMScheduler", "EulerDiscreteScheduler", "DPMSolverMultistepScheduler", "DDPMScheduler", "LCMScheduler",
             "UniPCMultistepScheduler", "KDPM2AncestralDiscreteScheduler", "HeunDiscreteScheduler",
             "EulerAncestralDiscreteScheduler", "PNDMScheduler"):  # LMSDiscreteScheduler needs scipy
    _b, _i = _cfg_sampler(_sch)
    RECIPES.append(Recipe(f"diffusers_cfg_{_sch.replace('Scheduler', '').lower()}", "diffusers", _b, _i,
                          f"classifier-free guidance, two sampler steps with {_sch}"))


# ---------------------------------------------------------------------------------------------------------
# torchvision: detection (train: images + targets -> loss dict; eval: list of detections), classification
# and segmentation with their training-only branches


def _det_targets(n=2, h=64, w=64, masks=False, keypoints=False, seed=7, classes=4):
    import torch

    g = _g(seed)
    tg = []
    for i in range(n):
        k = 2 + i
        xy = torch.rand(k, 2, generator=g) * (w / 2)
        wh = torch.rand(k, 2, generator=g) * (w / 3) + 4
        t = {"boxes": torch.cat([xy, xy + wh], 1), "labels": torch.randint(1, classes, (k,), generator=g)}
        if masks:
            t["masks"] = (torch.rand(k, h, w, generator=g) > 0.5).to(torch.uint8)
        if keypoints:
            kp = torch.rand(k, 3, 3, generator=g) * (w / 2)
            kp[..., 2] = 1
            t["keypoints"] = kp
        tg.append(t)
    return tg


def _det_inputs(h=64, w=64, masks=False, keypoints=False, classes=4):
    def inputs(train):
        imgs = [_img(1, 3, h, w, seed=0)[0], _img(1, 3, h - 8, w, seed=1)[0]]  # two sizes: batching pads
        if train:
            return (imgs, _det_targets(2, h, w, masks, keypoints, classes=classes)), {}
        return (imgs,), {}
    return inputs


_DET_SMALL = dict(min_size=64, max_size=64)


def _tv(name, fn, inputs, note):
    RECIPES.append(Recipe(f"tv_{name}", "torchvision", _seeded(fn), inputs, note))


def _fasterrcnn():
    from torchvision.models.detection import fasterrcnn_mobilenet_v3_large_320_fpn

    return fasterrcnn_mobilenet_v3_large_320_fpn(weights=None, weights_backbone=None, num_classes=4,
                                                 rpn_pre_nms_top_n_test=50, rpn_post_nms_top_n_test=20,
                                                 rpn_pre_nms_top_n_train=50, rpn_post_nms_top_n_train=20,
                                                 box_batch_size_per_image=16, **_DET_SMALL)


def _resnet18_fpn(trainable=3):
    from torchvision.models.detection.backbone_utils import resnet_fpn_backbone

    return resnet_fpn_backbone(backbone_name="resnet18", weights=None, trainable_layers=trainable)


def _maskrcnn():
    from torchvision.models.detection import MaskRCNN

    return MaskRCNN(_resnet18_fpn(), num_classes=4, rpn_pre_nms_top_n_test=50, rpn_post_nms_top_n_test=20,
                    rpn_pre_nms_top_n_train=50, rpn_post_nms_top_n_train=20, box_batch_size_per_image=16,
                    **_DET_SMALL)


def _keypointrcnn():
    from torchvision.models.detection import KeypointRCNN

    return KeypointRCNN(_resnet18_fpn(), num_classes=2, num_keypoints=3, rpn_pre_nms_top_n_test=50,
                        rpn_post_nms_top_n_test=20, rpn_pre_nms_top_n_train=50, rpn_post_nms_top_n_train=20,
                        box_batch_size_per_image=16, **_DET_SMALL)


def _retinanet():
    from torchvision.models.detection import RetinaNet
    from torchvision.models.detection.backbone_utils import _resnet_fpn_extractor
    from torchvision.ops.feature_pyramid_network import LastLevelP6P7
    from torchvision.models import resnet18

    bb = _resnet_fpn_extractor(resnet18(weights=None), 3, returned_layers=[2, 3, 4],
                               extra_blocks=LastLevelP6P7(256, 256))
    return RetinaNet(bb, num_classes=4, topk_candidates=50, detections_per_img=20, **_DET_SMALL)


def _fcos():
    from torchvision.models.detection import FCOS
    from torchvision.models.detection.backbone_utils import _resnet_fpn_extractor
    from torchvision.ops.feature_pyramid_network import LastLevelP6P7
    from torchvision.models import resnet18

    bb = _resnet_fpn_extractor(resnet18(weights=None), 3, returned_layers=[2, 3, 4],
                               extra_blocks=LastLevelP6P7(256, 256))
    return FCOS(bb, num_classes=4, topk_candidates=50, detections_per_img=20, **_DET_SMALL)


def _ssdlite():
    from torchvision.models.detection import ssdlite320_mobilenet_v3_large

    return ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None, num_classes=4, detections_per_img=20,
                                         topk_candidates=50)


_tv("fasterrcnn_mbv3", _fasterrcnn, _det_inputs(), "Faster R-CNN (MobileNetV3 FPN): transform, RPN, ROI heads, losses")
_tv("maskrcnn_r18", _maskrcnn, _det_inputs(masks=True), "Mask R-CNN (ResNet-18 FPN): mask head, mask targets")
_tv("keypointrcnn_r18", _keypointrcnn, _det_inputs(keypoints=True, classes=2), "Keypoint R-CNN: keypoint targets and loss")
_tv("retinanet_r18", _retinanet, _det_inputs(), "RetinaNet: anchor matching, focal loss, per-level top-k")
_tv("fcos_r18", _fcos, _det_inputs(), "FCOS: center sampling, GIoU loss")
_tv("ssdlite", _ssdlite, _det_inputs(320, 320), "SSDlite: hard negative mining, fixed 320 transform")


def _googlenet():
    from torchvision.models import googlenet

    return googlenet(weights=None, aux_logits=True, init_weights=True, num_classes=10)


_tv("googlenet", _googlenet, _images_only(2, 64, 64), "GoogLeNet: auxiliary logits in train, a namedtuple output")


def _tv_vit():
    from torchvision.models.vision_transformer import VisionTransformer

    return VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32, mlp_dim=64,
                             num_classes=10)


_tv("vit", _tv_vit, _images_only(), "VisionTransformer: size assertions (torch._assert) in _process_input")


def _swin():
    from torchvision.models.swin_transformer import SwinTransformer

    return SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[1, 1], num_heads=[1, 2], window_size=[4, 4],
                           stochastic_depth_prob=0.2, num_classes=10)


_tv("swin", _swin, _images_only(2, 40, 40), "Swin: shifted-window padding, StochasticDepth in train")


def _effnet():
    from torchvision.models import efficientnet_b0

    return efficientnet_b0(weights=None, num_classes=10, stochastic_depth_prob=0.2)


_tv("efficientnet_b0", _effnet, _images_only(), "EfficientNet: StochasticDepth (row mode) in train")


def _deeplab():
    from torchvision.models.segmentation import deeplabv3_mobilenet_v3_large

    return deeplabv3_mobilenet_v3_large(weights=None, weights_backbone=None, num_classes=4, aux_loss=True)


_tv("deeplabv3_mbv3", _deeplab, _images_only(2, 64, 64), "DeepLabV3: aux classifier, OrderedDict outputs, "
    "interpolation to the input size")


def _raft():
    from torchvision.models.optical_flow import raft_small

    return raft_small(weights=None, progress=False)


def _raft_inputs(train):
    return (_img(1, 3, 128, 128, seed=0), _img(1, 3, 128, 128, seed=1)), {"num_flow_updates": 2}


_tv("raft_small", _raft, _raft_inputs, "RAFT: iterative flow updates, correlation pyramid, shape checks")


def _r3d():
    from torchvision.models.video import r3d_18

    return r3d_18(weights=None, num_classes=5)


_tv("r3d_18", _r3d, lambda train: ((__import__("torch").rand(1, 3, 4, 32, 32, generator=_g(8)),), {}),
    "R3D-18 video classifier")



def _tv_transforms():
    import torch
    from torchvision.transforms import v2

    class Augment(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 3, 3, padding=1)
            self.t = v2.Compose([v2.RandomResizedCrop(24, antialias=True), v2.RandomHorizontalFlip(),
                                 v2.RandomApply([v2.ColorJitter(0.3, 0.3, 0.3, 0.1)], p=0.8), v2.RandomGrayscale(0.2),
                                 v2.RandomErasing(p=0.5), v2.Normalize([0.5] * 3, [0.25] * 3)])

        def forward(self, x):
            return self.conv(self.t(x))  # the transforms work on the data, as in a training input pipeline

    return Augment()


_tv("transforms_v2", _tv_transforms, _images_only(), "transforms.v2 pipeline on a batch: random crop box, "
    "RandomApply, ColorJitter order permutation, RandomErasing")


def _tv_ops():
    import torch
    from torchvision import ops

    class Ops(torch.nn.Module):
        """torchvision.ops as a detection or segmentation training step calls them."""

        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
            self.sd = ops.StochasticDepth(0.3, "row")
            self.db = ops.DropBlock2d(0.3, 3)
            self.pool = ops.MultiScaleRoIAlign(["feat"], 4, 2)

        def forward(self, x, boxes, scores, idx):
            f = self.db(self.sd(self.conv(x)))
            keep = ops.batched_nms(boxes, scores, idx, 0.5)
            masks = f[:, 0] > 0
            mb = ops.masks_to_boxes(masks)
            iou = ops.box_iou(boxes, mb)
            loss = ops.generalized_box_iou_loss(boxes[:2], mb[:2], reduction="mean")
            foc = ops.sigmoid_focal_loss(f[:, 1], (f[:, 2] > 0).float(), reduction="mean")
            rois = self.pool({"feat": f}, [boxes[keep[:2]], mb], [(32, 32), (32, 32)])
            return rois.mean() + iou.mean() + loss + foc

    return Ops()


def _tv_ops_inputs(train):
    import torch

    g = _g(3)
    xy = torch.rand(6, 2, generator=g) * 16
    return (_img(2, 3, 32, 32), torch.cat([xy, xy + 8], 1), torch.rand(6, generator=g),
            torch.tensor([0, 0, 1, 1, 2, 2])), {}


_tv("ops", _tv_ops, _tv_ops_inputs, "torchvision.ops: StochasticDepth, DropBlock2d, batched_nms, "
    "masks_to_boxes, box IoU and losses, MultiScaleRoIAlign")

# ---------------------------------------------------------------------------------------------------------
# torch_geometric: message passing with pooling over a batch of small random graphs


def _graph_batch(n_graphs=3, nodes=(5, 7, 6), feat=8, seed=9, edge_attr=False):
    import torch

    g = _g(seed)
    xs, eis, batch, off = [], [], [], 0
    for i in range(n_graphs):
        n = nodes[i % len(nodes)]
        xs.append(torch.randn(n, feat, generator=g))
        src = torch.arange(n)
        dst = (src + 1) % n
        extra = torch.randint(0, n, (2, n), generator=g)
        ei = torch.cat([torch.stack([src, dst]), torch.stack([dst, src]), extra], 1) + off
        eis.append(ei)
        batch.append(torch.full((n,), i, dtype=torch.long))
        off += n
    x = torch.cat(xs)
    ei = torch.cat(eis, 1)
    out = {"x": x, "edge_index": ei, "batch": torch.cat(batch)}
    if edge_attr:
        out["edge_attr"] = torch.randn(ei.size(1), 4, generator=g)
    return out


def _pyg_inputs(**kw):
    def inputs(train):
        d = _graph_batch(**kw)
        return (), d
    return inputs


def _pyg(name, fn, note, inputs=None):
    RECIPES.append(Recipe(f"pyg_{name}", "torch_geometric", _seeded(fn), inputs or _pyg_inputs(), note))


def _pyg_classifier(conv_factory, pool: str, hidden=16, **pool_kw):
    """A graph classifier: two convolutions, an optional hierarchical pooling layer, a global readout."""
    import torch
    import torch_geometric.nn as gnn

    class GraphClassifier(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = conv_factory(8, hidden)
            self.conv2 = conv_factory(hidden, hidden)
            self.pool = None
            if pool == "topk":
                self.pool = gnn.TopKPooling(hidden, ratio=0.5)
            elif pool == "sag":
                self.pool = gnn.SAGPooling(hidden, ratio=0.5)
            elif pool == "edge":
                self.pool = gnn.EdgePooling(hidden)
            elif pool == "asap":
                self.pool = gnn.ASAPooling(hidden, ratio=0.5)
            self.lin = torch.nn.Linear(hidden, 3)

        def forward(self, x, edge_index, batch):
            x = self.conv1(x, edge_index).relu()
            if self.pool is not None:
                if pool == "edge":
                    x, edge_index, batch, _ = self.pool(x, edge_index, batch)
                else:
                    x, edge_index, _, batch, *_ = self.pool(x, edge_index, batch=batch)
            x = self.conv2(x, edge_index).relu()
            x = gnn.global_mean_pool(x, batch) + gnn.global_max_pool(x, batch)
            return self.lin(x)

    return GraphClassifier()


def _gcn_topk():
    import torch_geometric.nn as gnn

    return _pyg_classifier(lambda i, o: gnn.GCNConv(i, o), "topk")


def _gat_sag():
    import torch_geometric.nn as gnn

    return _pyg_classifier(lambda i, o: gnn.GATConv(i, o // 2, heads=2, dropout=0.1), "sag")


def _sage_edge():
    import torch_geometric.nn as gnn

    return _pyg_classifier(lambda i, o: gnn.SAGEConv(i, o), "edge")


def _gin_mean():
    import torch
    import torch_geometric.nn as gnn

    return _pyg_classifier(lambda i, o: gnn.GINConv(torch.nn.Sequential(torch.nn.Linear(i, o), torch.nn.ReLU(),
                                                                        torch.nn.Linear(o, o))), "none")


def _gatv2_asap():
    import torch_geometric.nn as gnn

    return _pyg_classifier(lambda i, o: gnn.GATv2Conv(i, o // 2, heads=2), "asap")


_pyg("gcn_topk", _gcn_topk, "GCN + TopKPooling (top-k per graph) + global mean/max pooling")
_pyg("gat_sag", _gat_sag, "GAT (attention dropout) + SAGPooling")
_pyg("sage_edgepool", _sage_edge, "GraphSAGE + EdgePooling (greedy edge contraction)")
_pyg("gin", _gin_mean, "GIN + global pooling")
_pyg("gatv2_asap", _gatv2_asap, "GATv2 + ASAPooling")


def _pyg_models_gcn():
    from torch_geometric.nn.models import GCN

    import torch

    class NodeModel(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.m = GCN(8, 16, num_layers=3, out_channels=3, dropout=0.2, norm="batch_norm", jk="cat")

        def forward(self, x, edge_index, batch):
            return self.m(x, edge_index, batch=batch)

    return NodeModel()


_pyg("models_gcn_jk", _pyg_models_gcn, "torch_geometric.nn.models.GCN: BasicGNN with batch norm and jumping knowledge")


def _pyg_dense():
    import torch
    import torch_geometric.nn as gnn
    from torch_geometric.utils import to_dense_adj, to_dense_batch

    class DenseDiffPool(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = gnn.GCNConv(8, 16)
            self.pool_conv = gnn.DenseGCNConv(16, 4)
            self.embed = gnn.DenseSAGEConv(16, 16)
            self.lin = torch.nn.Linear(16, 3)

        def forward(self, x, edge_index, batch):
            x = self.conv(x, edge_index).relu()
            xd, mask = to_dense_batch(x, batch)
            adj = to_dense_adj(edge_index, batch)
            s = self.pool_conv(xd, adj, mask)
            z = self.embed(xd, adj, mask)
            z, adj, l1, l2 = gnn.dense_diff_pool(z, adj, s, mask)
            return self.lin(z.mean(1)) + l1 + l2

    return DenseDiffPool()


_pyg("dense_diffpool", _pyg_dense, "to_dense_batch / to_dense_adj (sizes from the batch vector), DiffPool")


def _pyg_graph_unet():
    import torch
    from torch_geometric.nn.models import GraphUNet

    class UNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.m = GraphUNet(8, 16, 3, depth=2, pool_ratios=0.5)

        def forward(self, x, edge_index, batch):
            return self.m(x, edge_index, batch)

    return UNet()


_pyg("graph_unet", _pyg_graph_unet, "GraphUNet: TopKPooling with adjacency augmentation (sparse matmul), unpooling")


def _pyg_set2set():
    import torch
    import torch_geometric.nn as gnn

    class Readouts(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = gnn.GraphConv(8, 16, aggr="add")
            self.att = gnn.AttentionalAggregation(torch.nn.Linear(16, 1))
            self.s2s = gnn.Set2Set(16, processing_steps=2)
            self.lin = torch.nn.Linear(16 + 32, 3)

        def forward(self, x, edge_index, batch):
            x = self.conv(x, edge_index).relu()
            return self.lin(torch.cat([self.att(x, batch), self.s2s(x, batch)], 1))

    return Readouts()


_pyg("readouts_set2set", _pyg_set2set, "AttentionalAggregation (softmax per graph) and Set2Set (LSTM loop)")


def _pyg_transformer_conv():
    import torch
    import torch_geometric.nn as gnn

    class EdgeModel(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = gnn.TransformerConv(8, 8, heads=2, edge_dim=4, dropout=0.1)
            self.norm = gnn.GraphNorm(16)
            self.lin = torch.nn.Linear(16, 3)

        def forward(self, x, edge_index, batch, edge_attr):
            x = self.norm(self.conv(x, edge_index, edge_attr), batch).relu()
            return self.lin(gnn.global_add_pool(x, batch))

    return EdgeModel()


_pyg("transformerconv_graphnorm", _pyg_transformer_conv, "TransformerConv with edge features, GraphNorm per graph",
     _pyg_inputs(edge_attr=True))


# ---------------------------------------------------------------------------------------------------------
# kornia: augmentation pipelines (random parameters per sample), geometry, filters, features


def _kornia_wrap(make_ops, need_conv=True):
    """A conv (so train mode has parameters and a backward) followed by kornia operations."""
    def build():
        import torch

        class K(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = torch.nn.Conv2d(3, 3, 3, padding=1)
                self.ops = make_ops()

            def forward(self, x):
                return self.ops(self.conv(x))

        return K()
    return build


def _kornia(name, make_ops, note, inputs=None):
    RECIPES.append(Recipe(f"kornia_{name}", "kornia", _seeded(_kornia_wrap(make_ops)), inputs or _images_only(),
                          note))


def _aug_seq():
    import kornia.augmentation as K

    return K.AugmentationSequential(K.RandomHorizontalFlip(p=0.5), K.RandomAffine(degrees=15, translate=0.1, p=0.7),
                                    K.ColorJitter(0.2, 0.2, 0.2, 0.1, p=0.8), data_keys=["input"])


def _aug_crop():
    import kornia.augmentation as K

    return K.AugmentationSequential(K.RandomResizedCrop((24, 24), p=1.0), K.RandomErasing(p=0.5),
                                    K.RandomGaussianBlur((3, 3), (0.1, 2.0), p=0.5), K.Normalize(0.5, 0.25))


def _aug_image_seq():
    import kornia.augmentation as K

    return K.ImageSequential(K.RandomGrayscale(p=0.5), K.RandomPerspective(0.3, p=0.5),
                             K.RandomRotation(20.0, p=0.5), K.RandomSharpness(0.5, p=0.5), random_apply=2)


def _aug_mix():
    import torch
    import kornia.augmentation as K

    class Mix(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.mix = K.RandomMixUpV2(p=1.0, data_keys=["input", "class"])
            self.cut = K.RandomCutMixV2(p=1.0, data_keys=["input", "class"])

        def forward(self, x):
            labels = torch.arange(x.shape[0])
            y, mixed = self.mix(x, labels)
            z, cut = self.cut(y, labels)
            return z.flatten(1).sum(1) + mixed.sum(1) + cut.flatten(1).sum(1)

    return Mix()


def _geometry():
    import torch
    import kornia.geometry as KG

    class Geo(torch.nn.Module):
        def forward(self, x):
            b = x.shape[0]
            ang = torch.linspace(-20.0, 20.0, b)
            center = torch.tensor([[16.0, 16.0]]).repeat(b, 1)
            m = KG.get_rotation_matrix2d(center, ang, torch.ones(b, 2))
            y = KG.warp_affine(x, m, (32, 32))
            y = KG.resize(y, (24, 40), antialias=True)
            y = KG.rotate(y, ang)
            h = KG.get_perspective_transform(torch.tensor([[[0., 0.], [23., 0.], [23., 39.], [0., 39.]]]).repeat(b, 1, 1),
                                             torch.tensor([[[1., 2.], [22., 0.], [20., 38.], [0., 36.]]]).repeat(b, 1, 1))
            y = KG.warp_perspective(y, h, (24, 40))
            return KG.pyrdown(y) .mean() + KG.transform.crop_by_indices(y, torch.tensor(
                [[[2., 2.], [17., 2.], [17., 17.], [2., 17.]]]).repeat(b, 1, 1)).sum()

    return Geo()


def _filters():
    import torch
    import kornia

    class F(torch.nn.Module):
        def forward(self, x):
            g = kornia.color.rgb_to_grayscale(x)
            mag, edges = kornia.filters.canny(g)
            s = kornia.filters.sobel(g)
            b = kornia.filters.gaussian_blur2d(x, (5, 5), (1.5, 1.5))
            med = kornia.filters.median_blur(x, (3, 3))
            eq = kornia.enhance.equalize(x.clamp(0, 1))
            hsv = kornia.color.rgb_to_hsv(x.clamp(0, 1))
            return mag.sum() + edges.sum() + s.sum() + b.sum() + med.sum() + eq.sum() + hsv.sum()

    return F()


def _features():
    import torch
    import kornia.feature as KF

    class Feat(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.detector = KF.ScaleSpaceDetector(num_features=8, mr_size=6.0)
            self.desc = KF.SIFTDescriptor(16, 8, 4)
            self.hardnet = KF.HardNet(pretrained=False)

        def forward(self, x):
            g = x.mean(1, keepdim=True)
            lafs, resp = self.detector(g)
            patches = KF.extract_patches_from_pyramid(g, lafs, 16)
            d = self.desc(patches.view(-1, 1, 16, 16))
            p32 = torch.nn.functional.interpolate(patches.view(-1, 1, 16, 16), size=32)
            return d.sum() + self.hardnet(p32).sum() + resp.sum()

    return Feat()


def _losses():
    import torch
    import kornia

    class L(torch.nn.Module):
        def forward(self, x):
            y = x.flip(-1).sigmoid()
            xs = x.sigmoid()
            labels = (x[:, 0] > 0).long()
            return (kornia.losses.ssim_loss(xs, y, 5) + kornia.losses.psnr_loss(xs, y, 1.0)
                    + kornia.losses.focal_loss(x[:, :2], labels.clamp(0, 1), alpha=0.25, reduction="mean")
                    + kornia.losses.total_variation(xs).mean())

    return L()


def _aug_mosaic():
    import kornia.augmentation as K

    return K.AugmentationSequential(K.RandomCrop((28, 28), padding=2, pad_if_needed=True, p=1.0),
                                    K.RandomJigsaw((2, 2), p=0.5), K.RandomPlanckianJitter(p=0.5), data_keys=["input"])


def _morphology():
    import torch
    import kornia

    class Morph(torch.nn.Module):
        def forward(self, x):
            k = torch.ones(3, 3)
            o = kornia.morphology.opening(x, k) + kornia.morphology.gradient(x, k)
            binary = (x[:, :1] > 0.5).float()
            cc = kornia.contrib.connected_components(binary, num_iterations=10)
            patches = kornia.contrib.extract_tensor_patches(x, 8, stride=8)
            return o.mean() + cc.float().mean() + patches.mean()

    return Morph()


_kornia("augmentation_sequential", _aug_seq, "AugmentationSequential(RandomHorizontalFlip, RandomAffine, ColorJitter): "
        "per-sample random parameters, batch_prob masks")
_kornia("augmentation_crop", _aug_crop, "RandomResizedCrop, RandomErasing, RandomGaussianBlur, Normalize")
_kornia("image_sequential_random", _aug_image_seq, "ImageSequential with random_apply: random subset of ops per call")
_kornia("mixup_cutmix", _aug_mix, "RandomMixUpV2 and RandomCutMixV2 with labels")
_kornia("geometry", _geometry, "kornia.geometry: rotation matrices, warp_affine, resize with antialias, "
        "warp_perspective, pyrdown, crop_by_indices")
_kornia("filters_color_enhance", _filters, "canny (hysteresis), sobel, blur, median, equalize (histograms), rgb_to_hsv")
_kornia("features", _features, "ScaleSpaceDetector, extract_patches_from_pyramid, SIFTDescriptor, HardNet",
        _images_only(1, 48, 48))
_kornia("losses", _losses, "ssim_loss, psnr_loss, focal_loss, total_variation")
_kornia("crop_jigsaw", _aug_mosaic, "RandomCrop with padding, RandomJigsaw (a mix augmentation), RandomPlanckianJitter")
_kornia("morphology_contrib", _morphology, "morphology opening/gradient, connected_components (iterative), "
        "extract_tensor_patches")


BY_NAME = {r.name: r for r in RECIPES}
assert len(BY_NAME) == len(RECIPES), "duplicate recipe names"


def select(models: str | None = None, libs: str | None = None) -> list[Recipe]:
    """The rows to run: --models (names, each must exist), then filtered by --libs. Raises ValueError."""
    rows = RECIPES
    if models:
        names = [n for n in models.split(",") if n]
        unknown = [n for n in names if n not in BY_NAME]
        if unknown:
            raise ValueError(f"unknown models: {', '.join(unknown)}")
        rows = [BY_NAME[n] for n in names]
    if libs:
        want = [x for x in libs.split(",") if x]
        unknown = [x for x in want if x not in LIBS]
        if unknown:
            raise ValueError(f"unknown libraries: {', '.join(unknown)} (known: {', '.join(LIBS)})")
        rows = [r for r in rows if r.lib in want]
    return rows
