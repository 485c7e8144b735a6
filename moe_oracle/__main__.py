from moe_oracle.cli import main

raise SystemExit(main())
