from replayci.cli import main

main()
