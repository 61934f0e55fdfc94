"""Expands a packaged SAM template to plain CloudFormation, as CloudFormation's
`AWS::Serverless-2016-10-31` transform does, with AWS's own translator
(aws-sam-translator, pinned in scripts/test.sh and docs/deploying.md).

    python infra/expand.py PACKAGED.json EXPANDED.json

PACKAGED.json is a template whose CodeUris are S3 locations (what
`streamdex package` or `sam package` writes). The region comes from
AWS_REGION (default us-east-1); it only shapes the partition of ARNs.
Exit codes: 0 expanded, 1 the translator refused the template (its reasons
are printed), 2 a usage or file error.
"""

import json
import os
import sys


def main(argv):
    if len(argv) != 3 or argv[1] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        return 0 if len(argv) == 2 and argv[1] in ("-h", "--help") else 2
    source, target = argv[1], argv[2]
    os.environ.setdefault("AWS_DEFAULT_REGION", os.environ.get("AWS_REGION", "us-east-1"))
    try:
        from samtranslator.model.exceptions import InvalidDocumentException
        from samtranslator.parser import parser
        from samtranslator.translator.translator import Translator
    except ImportError as e:
        print(f"expand: aws-sam-translator is not installed ({e}); pip install aws-sam-translator", file=sys.stderr)
        return 2
    try:
        with open(source, encoding="utf-8") as f:
            template = json.load(f)
    except (OSError, ValueError) as e:
        print(f"expand: cannot read {source}: {e}", file=sys.stderr)
        return 2
    # The functions have roles of their own, so no managed policy is looked up.
    translator = Translator(managed_policy_map={}, sam_parser=parser.Parser())
    try:
        expanded = translator.translate(sam_template=template, parameter_values={})
    except InvalidDocumentException as e:
        for cause in e.causes:
            print(f"expand: {source}: {cause.message}", file=sys.stderr)
        return 1
    try:
        with open(target, "w", encoding="utf-8") as f:
            json.dump(expanded, f, indent=2, sort_keys=True)
            f.write("\n")
    except OSError as e:
        print(f"expand: cannot write {target}: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
