"""python -m autoreg export-onnx --model M --out model.onnx [--grid D H W] [--opset 20]"""
import argparse
import sys


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autoreg", description="autoreg's Python tools")
    commands = parser.add_subparsers(dest="command", required=True)
    export = commands.add_parser("export-onnx", help="write a model's network as ONNX (docs/python.md)")
    export.add_argument("--model", default="default", help="an .autoreg file, or 'default'")
    export.add_argument("--out", required=True, help="the .onnx file to write")
    export.add_argument("--grid", type=int, nargs=3, metavar=("D", "H", "W"), help="input size (default: the model's grid)")
    export.add_argument("--opset", type=int, default=20)
    args = parser.parse_args(argv)
    import autoreg

    try:
        path = autoreg.export_onnx(args.model, args.out, grid=args.grid, opset=args.opset)
    except (autoreg.ModelFileError, ValueError) as e:
        print(f"python -m autoreg export-onnx: {e}", file=sys.stderr)
        return 2
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
