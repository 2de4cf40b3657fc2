"""``imagenet-cp metrics``: benchmark metrics from errors, predictions or logits files, as JSON."""
import sys

__all__ = ["NAME", "HELP", "add_arguments", "run"]

NAME = "metrics"
HELP = ("print ImageNet-C (--errors), ImageNet-P (--flips), ImageNet-A or ImageNet-O metrics as JSON; "
        "file formats: docs/reference/metrics.md")


def add_arguments(parser):
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--errors", help='JSON {"clean": e|null, "corruptions": {"<name>": [e1..e5]}}, '
                                         "fractions: CE, mCE, Relative CE (AlexNet = 100)")
    source.add_argument("--flips", help="NPZ of top-5 (V, T, 5) or top-1 (V, T) classes per ImageNet-P set: "
                                        "flip probability, top-5 distance, FR, mFR, T5D, mT5D")
    source.add_argument("--imagenet-a",
                        help="NPZ with logits (N, 1000) and labels (N,): accuracy, both conventions")
    source.add_argument("--imagenet-o", help="NPZ with logits_o and logits_val (N, 1000): AUPR, AUROC, FPR95")
    parser.add_argument("--baseline",
                        help="errors JSON of the normalising model for --errors (default: AlexNet)")
    parser.add_argument("--flip-baseline",
                        help="for --flips: JSON {perturbation: {flip_probability, top5_distance}} at "
                             "difficulty 1, or the baseline model's NPZ")


def run(args) -> int:
    import json

    from pipelines.evaluation import metrics_files
    from schemas.release import dumps
    from scripts.errors import describe_os_error

    try:
        if args.errors:
            result = metrics_files.imagenet_c_metrics(args.errors, args.baseline)
        elif args.flips:
            result = metrics_files.imagenet_p_metrics(args.flips, args.flip_baseline)
        elif args.imagenet_a:
            result = metrics_files.imagenet_a_metrics(args.imagenet_a)
        else:
            result = metrics_files.imagenet_o_metrics_file(args.imagenet_o)
        json.dumps(result, allow_nan=False)  # the output is always valid JSON
    except ValueError as err:
        message = str(err)
        if "Out of range float values are not JSON compliant" in message:
            message = "a metric is not finite (NaN or infinity): check the inputs and the baseline"
        print(f"imagenet-cp metrics: error: {message}", file=sys.stderr)
        return 2
    except OSError as err:
        print(f"imagenet-cp metrics: error: {describe_os_error(err)}", file=sys.stderr)
        return 2
    sys.stdout.write(dumps(result))
    return 0
