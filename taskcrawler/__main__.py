from taskcrawler.cli.main import main

raise SystemExit(main())
