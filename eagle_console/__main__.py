from eagle_console.cli import main

raise SystemExit(main())
