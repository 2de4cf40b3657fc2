"""Options and runners shared by ``filter-a`` / ``filter-o`` and ``package-a`` / ``package-o``."""
from scripts.build_options import add_beam_arguments
import sys

__all__ = ["add_filter_arguments", "run_filter", "add_package_arguments", "run_package"]


def add_filter_arguments(parser, task: str) -> None:
    """The options of a filter command (``task``: ``'imagenet_a'`` or ``'imagenet_o'``)."""
    from schemas.adversarial import CLASS_SETS, TASKS

    parser.add_argument("--candidates", required=True, help="folder of candidates <wnid>/<file> (A: the folder is "
                        "the weak label; O: the source synset, outside ImageNet-1k)")
    parser.add_argument("--model", action="append", required=True, dest="models",
                        help="ONNX filter model (imagenet-cp fetch-model); repeat for an ensemble, the first is primary")
    parser.add_argument("--output", required=True, help="output folder (decisions.jsonl, review/, logits/, ...)")
    parser.add_argument("--classes", default=TASKS[task].default_classes,
                        help=f"class set of the softmax and argmax: {', '.join(CLASS_SETS)} or a file of wnids "
                             f"(default {TASKS[task].default_classes})")
    parser.add_argument("--cap", type=int, default=15 if task == "imagenet_a" else 10,
                        help="most candidates kept per confusion " + ("(true, predicted) (default 15)"
                             if task == "imagenet_a" else "= predicted class (default 10, k)"))
    if task == "imagenet_a":
        parser.add_argument("--threshold", type=float, default=0.15,
                            help="R2: reject when P(weak label) exceeds this on some crop (default 0.15)")
    else:
        parser.add_argument("--msp-cut", type=float, default=0.0,
                            help="keep candidates whose min over crops of the max softmax probability reaches this")
    parser.add_argument("--min-size", type=int, help="R0: reject images whose short side is below this (pixels)")
    parser.add_argument("--metadata", help="JSON lines {key, source, url, licence, ...} shown to reviewers")
    parser.add_argument("--exemplars", help="folder of <wnid>/<image> training images: up to 5 per class are "
                        "shown on the review sheet")
    parser.add_argument("--workers", type=int, help="local worker processes (default: all cores)")
    add_beam_arguments(parser, "after '--': Beam pipeline options")


def run_filter(args, task: str) -> int:
    from pipelines.beam.adversarial_filter import filter_candidates, resolve_classes
    from pipelines.beam.runner import RunOptions
    from schemas.adversarial import DECISIONS, REVIEW_PAGE, FilterConfig

    try:
        name, wnids = resolve_classes(args.classes)
        config = FilterConfig(task, name, wnids, threshold=getattr(args, "threshold", 0.15), cap=args.cap,
                              msp_cut=getattr(args, "msp_cut", 0.0), min_size=args.min_size)
        document = filter_candidates(task, args.candidates, args.models, args.output, config, args.metadata,
                                     args.exemplars, RunOptions(workers=args.workers,
                                                                beam_args=[a for a in args.beam_args if a != "--"]))
    except (OSError, ValueError, ImportError) as err:
        print(f"imagenet-cp {args.command}: {err}", file=sys.stderr)
        return 2
    counts = document["counts"]
    print(f"{counts['decisions']} candidates: {counts['kept']} shortlisted, {counts['rejected']} rejected, "
          f"{counts['capped']} capped; {counts['failures']} unusable files in failures.jsonl; decisions in "
          f"{args.output}/{DECISIONS}; review sheet {args.output}/{REVIEW_PAGE}")
    return 0


def add_package_arguments(parser) -> None:
    parser.add_argument("--filtered", required=True, help="output folder of filter-a / filter-o")
    parser.add_argument("--accepted", required=True,
                        help="the reviewer's decisions: reviews.jsonl from the review sheet, or one accepted key a line")
    parser.add_argument("--output", required=True, help="the packaged set's folder")
    parser.add_argument("--candidates", help="the candidate folder (default: the one filter.json records)")


def run_package(args, task: str) -> int:
    from pipelines.release.package_a_o import package_set

    try:
        release = package_set(task, args.filtered, args.accepted, args.output, args.candidates)
    except (OSError, ValueError) as err:
        print(f"imagenet-cp {args.command}: {err}", file=sys.stderr)
        return 2
    print(f"{release.counts.images} images in {args.output}/{release.tree}/ and "
          f"{args.output}/packages/{release.tree}.tar; check with imagenet-cp verify {args.output}")
    return 0
