"""The VCR part of ``imagenet-cp evaluate``: its options, and the run on a VCR release."""
import sys

__all__ = ["add_arguments", "dispatch", "run"]


def add_arguments(parser):
    """Options that only a VCR release uses (grouped under "VCR releases" in --help)."""
    group = parser.add_argument_group("VCR releases")
    group.add_argument("--human", help="human reference: per-trial .csv (corruption, vd_score, label, transf_pred"
                                       "[, orig_pred]) with a .json sidecar, or a curves .json; without it HMRI "
                                       "and MRSI are refused")
    group.add_argument("--human-meta", help="sidecar JSON of a per-trial CSV (default: <csv>.json)")
    group.add_argument("--bins", type=int, default=20, help="delta_v bins (default 20)")
    group.add_argument("--smoothing", type=float, default=0.04, help="UnivariateSpline s (default 0.04)")
    group.add_argument("--empty-bin", choices=("zero", "drop"), default="zero",
                       help="an empty bin counts as 0 (VCR's code, default) or is left out of the fit")
    group.add_argument("--knots", choices=("left", "centre"), default="left",
                       help="bin i sits at i/n (VCR's code, default) or at its centre (i+0.5)/n")
    group.add_argument("--human-min-trials", type=int, default=10,
                       help="warn about human bins with fewer trials (default 10)")


def dispatch(args):
    """Run the VCR evaluation when ``--release`` is a VCR release and return its exit code; refuse
    the VCR-only options on another release (exit 2); None lets the other editions' flow run."""
    from pipelines.evaluation.vcr_scores import is_vcr_release

    if is_vcr_release(args.release):
        if getattr(args, "configs", None):
            print("imagenet-cp evaluate: --configs applies to ImageNet-C and ImageNet-P releases; a VCR release is "
                  "evaluated whole", file=sys.stderr)
            return 2
        return run(args)
    if args.human or args.human_meta:
        print(f"imagenet-cp evaluate: --human applies to VCR releases only; {args.release} is not one",
              file=sys.stderr)
        return 2
    return None


def run(args) -> int:
    from pipelines.beam.shutdown import BuildInterrupted, BuildStopped
    from pipelines.beam.inference import Model
    from pipelines.beam.runner import RunOptions
    from pipelines.beam.vcr_evaluate import evaluate_vcr
    from pipelines.evaluation.vcr_human import HumanFile
    from pipelines.evaluation.vcr_scores import analysis_settings

    try:
        out = evaluate_vcr(args.release, Model(args.model, args.framework, args.batch_size), args.output,
                           HumanFile(args.human, args.human_meta, args.human_min_trials),
                           analysis_settings(args.bins, args.smoothing, args.empty_bin, args.knots),
                           RunOptions(workers=args.workers, beam_args=[a for a in args.beam_args if a != "--"],
                                      force=args.force))
    except (OSError, ValueError, ImportError) as err:
        print(f"imagenet-cp evaluate: {err}", file=sys.stderr)
        return 2
    except (BuildInterrupted, BuildStopped) as err:  # the parts are kept: resumable
        print(f"imagenet-cp evaluate: {err}", file=sys.stderr)
        return err.exit_code
    print(f"wrote {out}/metrics.json and {out}/report.md")
    return 0
