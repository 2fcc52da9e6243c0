"""looplets"""
