from distill.cli import main

main()
