from vitbench.cli import main

raise SystemExit(main())
