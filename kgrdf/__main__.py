from kgrdf.cli import main

main()
