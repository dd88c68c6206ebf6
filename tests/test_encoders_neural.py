"""Neural encoders: clip (random-init small model, checkpoint round trip), minilm, effnet; CUDA parity."""
from __future__ import annotations

import io

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("open_clip")
PIL = pytest.importorskip("PIL.Image")
skdata = pytest.importorskip("skimage.data")

from sibscan.store.cache import embed  # noqa: E402
from sibscan.encoders import encoder_class, get_encoder  # noqa: E402
from sibscan.errors import InputError, SibscanError  # noqa: E402
from sibscan.items import Items  # noqa: E402

# A tiny open_clip architecture (registered with open_clip.add_model_config), quick on two CPU cores;
# the stock ViT-S-32 / ViT-B-32 run in the CUDA tests and the benchmark.
SMALL_CLIP = "sibscan-test-tiny"
TINY_CONFIG = {
    "embed_dim": 64,
    "vision_cfg": {"image_size": 64, "layers": 2, "width": 64, "patch_size": 16, "head_width": 32},
    "text_cfg": {"context_length": 32, "vocab_size": 49408, "width": 64, "heads": 2, "layers": 2},
}
PHOTOS = ("chelsea", "astronaut", "coffee", "rocket")


@pytest.fixture(scope="module", autouse=True)
def tiny_clip_config(tmp_path_factory):
    import json

    import open_clip

    path = tmp_path_factory.mktemp("clipcfg") / f"{SMALL_CLIP}.json"
    path.write_text(json.dumps(TINY_CONFIG))
    open_clip.add_model_config(path)


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    """Real photos, each with a resized, a low-quality JPEG and a slightly cropped copy."""
    d = tmp_path_factory.mktemp("photos")
    originals, variants = [], []
    for name in PHOTOS:
        im = PIL.fromarray(getattr(skdata, name)()).convert("RGB")
        im.thumbnail((256, 256), PIL.BICUBIC)  # small: decoding stays cheap
        p = d / f"{name}.png"
        im.save(p)
        originals.append(str(p))
        w, h = im.size
        im.resize((w * 2 // 3, h * 2 // 3), PIL.BICUBIC).save(d / f"{name}_small.png")
        buf = io.BytesIO()
        im.save(buf, format="JPEG", quality=25)
        (d / f"{name}_q25.jpg").write_bytes(buf.getvalue())
        im.crop((4, 4, w - 4, h - 4)).save(d / f"{name}_crop.png")
        variants.append([str(d / f"{name}_small.png"), str(d / f"{name}_q25.jpg"), str(d / f"{name}_crop.png")])
    return originals, variants


@pytest.fixture(scope="module")
def clip_enc():
    return get_encoder("clip", model=SMALL_CLIP, pretrained="none")


@pytest.fixture(scope="module")
def effnet_enc():
    return get_encoder("effnet", device="cpu")


@pytest.fixture(scope="module")
def minilm_enc():
    return get_encoder("minilm", device="cpu")


def _unit_rows(x: np.ndarray, dim: int, n: int) -> None:
    assert x.dtype == np.float32 and x.shape == (n, dim)
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-5)


def _nearest_original(originals: np.ndarray, queries: np.ndarray) -> np.ndarray:
    return np.argmax(queries @ originals.T, axis=1)


# --- clip -----------------------------------------------------------------------------------------
def test_clip_random_init_identity_and_shape(clip_enc, photos):
    originals, _ = photos
    assert clip_enc.modality == "image" and clip_enc.dim == TINY_CONFIG["embed_dim"]
    assert "random-init(seed=0)" in clip_enc.identity and f"model={SMALL_CLIP}" in clip_enc.identity
    out = clip_enc.encode(originals[:3])
    _unit_rows(out, clip_enc.dim, 3)
    # same seed -> same weights -> same embeddings (the identity promises it)
    again = get_encoder("clip", model=SMALL_CLIP, random_init=True, seed=0)
    assert again.identity == clip_enc.identity
    other_seed = get_encoder("clip", model=SMALL_CLIP, random_init=True, seed=1)
    assert other_seed.identity != clip_enc.identity


def test_clip_checkpoint_roundtrip_gives_identical_embeddings(clip_enc, photos, tmp_path):
    originals, _ = photos
    ckpt = tmp_path / "small.pt"
    torch.save({"state_dict": {f"module.{k}": v for k, v in clip_enc.net.state_dict().items()}}, ckpt)
    loaded = get_encoder("clip", model=SMALL_CLIP, checkpoint=str(ckpt))
    assert "weights=sha256:" in loaded.identity and loaded.identity != clip_enc.identity
    np.testing.assert_array_equal(loaded.encode(originals[:2]), clip_enc.encode(originals[:2]))


def test_clip_checkpoint_errors(tmp_path):
    bad = tmp_path / "bad.pt"
    torch.save({"visual.nothing": torch.zeros(3)}, bad)
    with pytest.raises(SibscanError,
                       match=r"bad.pt: checkpoint does not fit open_clip model 'sibscan-test-tiny': \d+ missing keys"):
        get_encoder("clip", model=SMALL_CLIP, checkpoint=str(bad))
    with pytest.raises(SibscanError, match=r"clip checkpoint .*missing.pt does not exist"):
        get_encoder("clip", model=SMALL_CLIP, checkpoint=str(tmp_path / "missing.pt"))
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a torch file")
    with pytest.raises(SibscanError, match=r"junk.pt: cannot load as a weights-only torch state dict"):
        get_encoder("clip", model=SMALL_CLIP, checkpoint=str(junk))


def test_clip_option_errors():
    with pytest.raises(SibscanError, match=r"needs weights: --pretrained TAG"):
        get_encoder("clip", model=SMALL_CLIP)
    with pytest.raises(SibscanError,
                       match=r"unknown pretrained tag 'bogus' for clip model 'ViT-B-32'; available: .*laion2b_s34b_b79k"):
        get_encoder("clip", model="ViT-B-32", pretrained="bogus")
    with pytest.raises(SibscanError, match=r"unknown open_clip model 'ViT-Nope'; available: .*ViT-B-32"):
        get_encoder("clip", model="ViT-Nope", pretrained="none")
    with pytest.raises(SibscanError, match=r"encoder 'clip' does not take option\(s\) model_path; its options are: "):
        get_encoder("clip", model=SMALL_CLIP, pretrained="none", model_path="x")


def test_clip_text_tower_shares_the_space(clip_enc):
    text = get_encoder("clip-text", model=SMALL_CLIP, pretrained="none")
    assert text.modality == "text" and text.dim == clip_enc.dim
    assert "tower=text" in text.identity
    out = text.encode(["a photo of a cat", "A photo of a cat", "the stock market fell"])
    _unit_rows(out, clip_enc.dim, 3)
    # the tokenizer lower-cases: case changes give the same vector
    np.testing.assert_allclose(out[0], out[1], atol=1e-6)


def test_encode_tensors_matches_encode_on_files(clip_enc, photos):
    originals, _ = photos
    pil = [PIL.open(p).convert("RGB") for p in originals[:2]]
    x = torch.stack([clip_enc.transform(im) for im in pil])
    np.testing.assert_allclose(clip_enc.encode_tensors(x), clip_enc.encode(originals[:2]), atol=1e-5)
    # uint8 pixels at the input size are normalised on the device
    crop = [np.asarray(im.resize(clip_enc.input_size[::-1], PIL.BICUBIC)) for im in pil]
    u8 = torch.from_numpy(np.stack(crop)).permute(0, 3, 1, 2).contiguous()
    ref = torch.stack([torch.from_numpy(c.copy()).permute(2, 0, 1).float() / 255 for c in crop])
    mean = torch.tensor(clip_enc.mean).view(1, 3, 1, 1)
    std = torch.tensor(clip_enc.std).view(1, 3, 1, 1)
    np.testing.assert_allclose(clip_enc.encode_tensors(u8), clip_enc.encode_tensors((ref - mean) / std), atol=1e-5)
    with pytest.raises(SibscanError, match=r"takes an \(n, 3, H, W\) batch, got shape \(2, 5\)"):
        clip_enc.encode_tensors(torch.zeros(2, 5))


def test_bad_image_is_one_line_input_error(clip_enc, photos, tmp_path):
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 20)
    with pytest.raises(InputError, match=r"broken.png: corrupt or unsupported image .*while embedding with clip"):
        clip_enc.encode([photos[0][0], str(broken)])


def test_dataloader_workers_give_same_embeddings(clip_enc, photos):
    import copy

    originals, _ = photos
    workers = copy.copy(clip_enc)
    workers.num_workers = 2
    np.testing.assert_allclose(workers.encode(originals, batch_size=2), clip_enc.encode(originals), atol=1e-5)


# --- effnet ---------------------------------------------------------------------------------------
def test_effnet_classifies_chelsea_as_a_cat(effnet_enc, photos):
    originals, _ = photos
    logits = effnet_enc.classify([originals[0]])
    assert logits.shape == (1, 1000)
    assert 281 <= int(logits[0].argmax()) <= 285, "chelsea must be an ImageNet cat (classes 281-285)"
    assert "sha256:579344248a93e230" in effnet_enc.identity


def test_effnet_transformed_photos_nearest_their_originals(effnet_enc, photos):
    originals, variants = photos
    base = effnet_enc.encode(originals)
    _unit_rows(base, 1280, len(originals))
    flat = [v for group in variants for v in group]
    q = effnet_enc.encode(flat)
    expected = np.repeat(np.arange(len(originals)), 3)
    np.testing.assert_array_equal(_nearest_original(base, q), expected)


def test_effnet_weight_mapping_fails_loudly_on_a_shape_change():
    from sibscan.encoders.effnet import N_TENSORS, bundled_weights_path, map_lite0_state_dict

    timm = pytest.importorskip("timm")
    source = torch.load(bundled_weights_path(), map_location="cpu", weights_only=True)
    target = timm.create_model("efficientnet_lite0", pretrained=False).state_dict()
    mapped = map_lite0_state_dict(source, target)
    assert len(mapped) == N_TENSORS == 247
    broken = dict(source)
    broken["_blocks.3._project_conv.weight"] = torch.zeros(7, 7, 1, 1)
    with pytest.raises(SibscanError,
                       match=r"do not map onto timm's efficientnet_lite0: _blocks.3._project_conv.weight \(7, 7, 1, 1\) -> blocks.2.0.conv_pwl.weight \(40, 144, 1, 1\)"):
        map_lite0_state_dict(broken, target)
    short = {k: v for k, v in list(source.items())[:-2]}
    with pytest.raises(SibscanError, match=r"have 245 tensors but timm's efficientnet_lite0 has 247"):
        map_lite0_state_dict(short, target)


# --- minilm ---------------------------------------------------------------------------------------
SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "Scientists discovered a new species of frog in the rainforest.",
    "The central bank raised interest rates by half a percentage point.",
    "She plays the violin in the city orchestra every weekend.",
    "The recipe calls for two cups of flour and a pinch of salt.",
]


def test_minilm_whitespace_and_case_variants_stay_nearest(minilm_enc):
    assert minilm_enc.dim == 384 and "sha256:" in minilm_enc.identity
    base = minilm_enc.encode(SENTENCES)
    _unit_rows(base, 384, len(SENTENCES))
    variants = ["  " + s.upper().replace(" ", "   ") + "\n" for s in SENTENCES]
    q = minilm_enc.encode(variants)
    np.testing.assert_array_equal(_nearest_original(base, q), np.arange(len(SENTENCES)))


def test_minilm_paraphrase_closer_than_unrelated_with_shared_words(minilm_enc):
    a, para, unrelated = minilm_enc.encode([
        "The central bank raised interest rates by half a percentage point.",
        "Interest rates were increased by 0.5% by the central bank.",
        "The central heating in the bank branch broke down at half past nine.",
    ])
    assert a @ para > a @ unrelated + 0.1


def test_minilm_batches_by_length_but_keeps_the_input_order(minilm_enc):
    texts = ["short one", "a much longer sentence about the evaluation set and its training data " * 3,
             "mid length text here", "x", "another fairly long sentence that needs several tokens to encode"]
    together = minilm_enc.encode(texts, batch_size=2)
    alone = np.vstack([minilm_enc.encode([t]) for t in texts])
    np.testing.assert_allclose(together, alone, atol=1e-4)


def test_minilm_model_path_and_errors(minilm_enc, tmp_path):
    from sibscan.encoders.minilm import bundled_model_path

    same = get_encoder("minilm", model_path=str(bundled_model_path()), device="cpu")
    assert same.identity.replace("model=model", "model=all-MiniLM-L6-v2") == minilm_enc.identity
    with pytest.raises(SibscanError, match=r"is not a sentence-transformers model folder"):
        get_encoder("minilm", model_path=str(tmp_path))
    short = get_encoder("minilm", max_seq_length=16)
    assert "max_seq_length=16" in short.identity and minilm_enc.max_seq_length == 256


def test_registry_metadata():
    for name, modality in (("clip", "image"), ("clip-text", "text"), ("minilm", "text"), ("effnet", "image")):
        cls = encoder_class(name)
        assert cls.modality == modality and not cls.weight_free
        assert cls.available() == (True, "")


def test_embed_through_cache_with_a_neural_encoder(effnet_enc, photos, tmp_path):
    originals = photos[0][:3]
    items = Items("train", "image", ids=[f"i{k}" for k in range(len(originals))], paths=originals)
    fp = np.arange(2 * len(originals), dtype=np.uint64).reshape(-1, 2)
    out = embed(items, effnet_enc, cache_dir=tmp_path, fingerprints=fp, batch_size=2, block_size=3, progress=False)
    np.testing.assert_allclose(out, effnet_enc.encode(originals), atol=2e-3)


# --- CUDA -----------------------------------------------------------------------------------------
@pytest.mark.cuda
def test_effnet_cuda_matches_cpu(effnet_enc, photos):
    originals, variants = photos
    gpu = get_encoder("effnet", device="cuda")
    cpu_out, gpu_out = effnet_enc.encode(originals), gpu.encode(originals)
    # bf16 autocast: cosine between the CPU and GPU vector of each image stays near 1
    assert (np.sum(cpu_out * gpu_out, axis=1) > 0.99).all()
    flat = [v for group in variants for v in group]
    np.testing.assert_array_equal(_nearest_original(gpu_out, gpu.encode(flat)), np.repeat(np.arange(len(originals)), 3))


@pytest.mark.cuda
def test_clip_cuda_matches_cpu(clip_enc, photos):
    originals, _ = photos
    cpu = get_encoder("clip", model="ViT-B-32", pretrained="none")
    gpu = get_encoder("clip", model="ViT-B-32", pretrained="none", device="cuda")
    assert gpu.identity == cpu.identity
    assert (np.sum(cpu.encode(originals) * gpu.encode(originals), axis=1) > 0.99).all()
    x = torch.randint(0, 256, (8, 3, 224, 224), dtype=torch.uint8)
    assert (np.sum(cpu.encode_tensors(x) * gpu.encode_tensors(x), axis=1) > 0.99).all()


@pytest.mark.cuda
def test_minilm_cuda_matches_cpu(minilm_enc):
    gpu = get_encoder("minilm", device="cuda")
    assert (np.sum(minilm_enc.encode(SENTENCES) * gpu.encode(SENTENCES), axis=1) > 0.99).all()
